"""Demand: offered work = served work + the queue's change; the backlog itself in work units.

Served throughput hides demand once replicas saturate. What arrived is what was served plus what the
queue gained, both over the same span: the served work is a rate over the metrics' rate window (a minute
by default), so the queue's change is taken over that window too (`window_change`). A queue that shrank
over it was served for requests offered before, not new demand (counted as demand, the forecaster would
learn the drain's pace as a level). Taken over one tick instead, the change disagrees with the window's
service whenever either moves: as replicas come up under a standing backlog, the window still holds the
small fleet's service while one tick's drain is already the large fleet's, and their sum fell to under
half of what arrived (flash-crowd, docs/benchmarks.md, decision change R).

A queue growing over two ticks in a row is added at once at its one-tick pace when that is faster than
the window's (a burst is answered within a tick, not a window): under a real queue at the newer tick's
pace, else the smaller of the two (decision change S). A one-scrape spike is a burst already absorbed by
the queue (it shows up in the backlog); extrapolating its one-tick pace over a cold start would order
replicas that arrive after it drained.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.capacity import real_queue, work_rate
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
    offered: float  # served + the queue's change over the rate window
    backlog: float  # work waiting in the queue
    waiting: float  # sequences waiting, as used (0 when unknown)
    waiting_known: bool  # whether `waiting` was read this tick (else no growth is derived from it)
    growth: float  # queue growth this tick, sequences/s
    work_per_request: float  # replica-seconds per request (EMA)
    recent: tuple[tuple[float, float], ...] = ()  # the queue samples the next tick's window needs

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


def queue_growth(recent: tuple[tuple[float, float], ...], waiting: float, now: float, interval: float) -> float:
    """Sequences/s the queue grew (negative: shrank) since the previous sample, if that sample is recent
    (else 0)."""
    if not recent:
        return 0.0
    t0, w0 = recent[-1]
    dt = now - t0
    return (waiting - w0) / dt if 0 < dt <= 4 * interval else 0.0


def window_old(age: float, interval: float, window: float) -> bool:
    """Whether a sample `age` seconds old is within half a tick of the rate window's age: the window's start."""
    return window - 0.5 * interval <= age <= window + 0.5 * interval


def window_change(recent: tuple[tuple[float, float], ...], waiting: float, now: float, interval: float,
                  window: float) -> float | None:
    """Sequences/s the queue grew (negative: shrank) over the rate window (`window` seconds): since the oldest
    sample within half a tick of a window old (None: no such sample, as in the first window after a start or
    a gap)."""
    oldest = next(((t, w) for t, w in recent if now - t > 0 and window_old(now - t, interval, window)), None)
    if oldest is None:
        return None
    t0, w0 = oldest
    return (waiting - w0) / (now - t0)


def remember_waiting(recent: tuple[tuple[float, float], ...], waiting: float | None, now: float,
                     interval: float, window: float) -> tuple[tuple[float, float], ...]:
    """The samples `window_change` needs at the next tick: this one and those within a rate window and a
    tick of it (none when `waiting` was not read: a gap starts the window afresh)."""
    if waiting is None:
        return ()
    keep = window + interval
    return (*((t, w) for t, w in recent if 0 <= now - t <= keep), (now, waiting))


def queue_stood(recent: tuple[tuple[float, float], ...], now: float, interval: float, window: float,
                ready: int) -> bool:
    """Whether a real queue (`core.capacity.real_queue` for `ready` replicas) stood at every sample of the last
    rate window, this tick's included (`recent` as `remember_waiting` returns it), the oldest within half a
    tick of a window old. Only then is the service read over that window a replica's throughput: a queue
    seen at one scrape, from a burst that came and went inside the window, beside a service averaged over
    the whole window is a utilisation (servegen-mid with its memory carried across days: such samples took
    the measured throughput from 0.79 to 0.48 of the prior in five days; docs/benchmarks.md, decision
    change X)."""
    covered = False
    for t, w in recent:
        age = now - t
        if age > window + 0.5 * interval:
            continue
        if not real_queue(w, ready):
            return False
        covered = covered or window_old(age, interval, window)
    return covered


def confirmed(growth: float, last_growth: float, is_real_queue: bool) -> float:
    """Queue growth seen at two ticks in a row: at the newer tick's pace under a real queue, else the smaller
    of the two; a drain seen at two ticks in a row, the smaller of the two; 0 when they disagree.

    A step in arrivals begins inside a tick, so the first tick that sees the queue grow sees only part of it,
    and the smaller of the two paces was that part (flash-crowd's step at minute 60: 8 sequences/s, then
    59). The sign two ticks in a row tells a burst from one scrape's spike, and a real queue
    (`core.capacity.real_queue`: 4 sequences per ready replica) tells it from the handful of sequences vLLM
    counts as waiting until their first step at any load; with both, the newer pace is the burst's. A drain
    is taken at its smaller size: it is subtracted from the service, and a smaller subtraction errs towards
    more replicas."""
    if growth > 0 and last_growth > 0:
        return growth if is_real_queue else min(growth, last_growth)
    if growth < 0 and last_growth < 0:
        return max(growth, last_growth)
    return 0.0


def change_of(growth: float, last_growth: float, window: float | None, waiting: float,
              is_real_queue: bool) -> float:
    """The queue's change demand counts (sequences/s): the rate window's, or a confirmed one-tick growth when
    that is faster; without a window's sample, the confirmed one-tick change (none once the queue is empty)."""
    tick = confirmed(growth, last_growth, is_real_queue)
    if window is None:
        return 0.0 if tick < 0 and waiting <= 0 else tick
    return max(tick, window) if tick > 0 else window


def demand(policy: PolicySpec, r: Readings, previous_wpr: float | None, recent: tuple[tuple[float, float], ...],
           last_growth: float, now: float, window: float, ready: int) -> Demand:
    """Demand from fresh token rates (`r.demand_known` must hold) read over a rate window of `window` seconds,
    with `ready` replicas serving."""
    assert r.prompt_tokens_rate is not None and r.generation_tokens_rate is not None
    cap = policy.capacity
    served = work_rate(cap, r.prompt_tokens_rate, r.generation_tokens_rate)
    known = r.waiting is not None
    waiting = max(0.0, r.waiting) if r.waiting is not None else 0.0
    wpr = work_per_request(cap, previous_wpr, served, r.request_rate)
    interval = policy.interval_seconds
    growth = queue_growth(recent, waiting, now, interval) if known else 0.0
    change = window_change(recent, waiting, now, interval, window) if known else None
    # A draining queue is served work that was offered earlier: what arrives now is the service minus it.
    # At most half the service is taken for a drain: without a sample a window old the drain is one tick's,
    # read over a shorter span than the service, and the work per request is an average.
    counted = change_of(growth, last_growth, change, waiting, real_queue(waiting, ready))
    offered = max(DRAIN_SHARE_LIMIT * served, served + counted * wpr)
    return Demand(served, offered, waiting * wpr, waiting, known, growth, wpr,
                  remember_waiting(recent, waiting if known else None, now, interval, window))
