"""Demand: offered work = served work + confirmed backlog growth; the backlog itself in work units.

Served throughput hides demand once replicas saturate, so a queue that grew over two intervals in a
row is added as demand; one that shrank over two is subtracted (draining it is service for requests
offered before, not new demand: counted as demand, the forecaster would learn the drain's pace as a
level). A one-scrape spike is a burst already absorbed by the queue (it shows up in the backlog);
extrapolating it over a cold start would order replicas that arrive after it drained.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.capacity import work_rate
from autoscaler.core.stages.readings import Readings
from autoscaler.policy import CapacitySpec, PolicySpec

# Replica-seconds per request assumed before any is measured: 1,000 prompt + 200 generated tokens at
# the prior. Only used to size a backlog before the first request-rate sample arrives.
DEFAULT_PROMPT_TOKENS, DEFAULT_GENERATION_TOKENS = 1000.0, 200.0
WORK_PER_REQUEST_EMA = 0.2
DRAIN_SHARE_LIMIT = 0.5  # offered work is at least this share of the work served
MAX_WORK_PER_REQUEST = 600.0  # replica-seconds: ten minutes of a whole replica for one request


@dataclass(frozen=True, slots=True)
class Demand:
    served: float  # work being served now (replica-equivalents at the prior)
    offered: float  # served + confirmed backlog growth
    backlog: float  # work waiting in the queue
    waiting: float  # sequences waiting, as used (0 when unknown)
    waiting_known: bool  # whether `waiting` was read this tick (else no growth is derived from it)
    growth: float  # queue growth this tick, sequences/s
    work_per_request: float  # replica-seconds per request (EMA)

    def explain(self) -> dict[str, float]:
        return {"offered_work": round(self.offered, 4), "served_work": round(self.served, 4),
                "backlog_work": round(self.backlog, 4)}


def work_per_request(cap: CapacitySpec, previous: float | None, served: float, request_rate: float | None) -> float:
    """The EMA of served work per finished request, or the default request's work before any sample."""
    wpr = previous
    if request_rate is not None and request_rate > 1e-6 and served > 0:
        sample = served / request_rate
        if sample <= MAX_WORK_PER_REQUEST:  # beyond that the two rates are out of step, not a real request
            wpr = sample if wpr is None else wpr + WORK_PER_REQUEST_EMA * (sample - wpr)
    return wpr if wpr is not None else work_rate(cap, DEFAULT_PROMPT_TOKENS, DEFAULT_GENERATION_TOKENS)


def queue_growth(last_waiting: tuple[float, float] | None, waiting: float, now: float, interval: float) -> float:
    """Sequences/s the queue grew (negative: shrank) since the previous sample, if that sample is recent
    (else 0)."""
    if last_waiting is None:
        return 0.0
    t0, w0 = last_waiting
    dt = now - t0
    return (waiting - w0) / dt if 0 < dt <= 4 * interval else 0.0


def confirmed(growth: float, last_growth: float) -> float:
    """Queue growth seen at two ticks in a row, the smaller of the two in size; 0 when they disagree."""
    if growth > 0 and last_growth > 0:
        return min(growth, last_growth)
    if growth < 0 and last_growth < 0:
        return max(growth, last_growth)
    return 0.0


def demand(policy: PolicySpec, r: Readings, previous_wpr: float | None, last_waiting: tuple[float, float] | None,
           last_growth: float, now: float) -> Demand:
    """Demand from fresh token rates (`r.demand_known` must hold)."""
    assert r.prompt_tokens_rate is not None and r.generation_tokens_rate is not None
    cap = policy.capacity
    served = work_rate(cap, r.prompt_tokens_rate, r.generation_tokens_rate)
    known = r.waiting is not None
    waiting = max(0.0, r.waiting) if r.waiting is not None else 0.0
    wpr = work_per_request(cap, previous_wpr, served, r.request_rate)
    growth = queue_growth(last_waiting, waiting, now, policy.interval_seconds) if known else 0.0
    # A draining queue is served work that was offered earlier: what arrives now is the service minus it.
    # The drain is read over one tick and the service over the rate window, so at most half the service is
    # taken for the drain.
    # Once the queue is empty the drain is over: what is served now is what arrives.
    change = confirmed(growth, last_growth)
    if change < 0 and waiting <= 0:
        change = 0.0
    offered = max(DRAIN_SHARE_LIMIT * served, served + change * wpr)
    return Demand(served, offered, waiting * wpr, waiting, known, growth, wpr)
