"""Burst: replicas for sub-minute bursts that a fleet under its planned load still queued.

A fleet carrying well under its plan per replica (at most BURST_LOAD_SHARE of it) whose requests still
waited past the SLO's queue budget did not lack capacity on average: bursts shorter than a metrics
window came in faster than it could start them. How long they waited is the size of the burst in time at
this fleet size. With requests spread over the replicas, the same burst waits about 1/n as long on n
replicas, so ready × (wait ÷ budget) replicas would have kept it within the budget. The wait is the queue
time at the SLO's quantile (vLLM's `request_queue_time_seconds` histogram, read like every SLO share in
`LatencyHistogram.share_within`), and the step is at most MAX_STEP times the ready count.

The window must judge the fleet that served it. The fleet has to have been steady (nothing starting, no
queue left from a scale-up) for STEADY_SECONDS plus that wait: a request that waited minutes arrived before,
when the fleet may have been smaller or still starting (a flash crowd's backlog draining after the fleet
grew is no sub-minute burst). This is headroom in absolute work, which a knee in load per replica cannot
express (a burst of a given size needs the same spare replicas at any mean load; docs/benchmarks.md, "Why M").

How long the replicas stay (`hold`): bursts that came once come again, but not on a schedule. A burst
replica let go costs a cold start to bring back, and a starting replica holds its GPU for that time too;
an idle replica kept costs its GPU time. Keeping it for one cold start after it is up, then letting it go,
is the break-even rule of the ski-rental problem: it never pays more than twice what the better choice
would have cost in hindsight (Karlin, Manasse, Rudolph and Sleator, "Competitive snoopy caching", 1988),
whether the next burst comes soon or never. A burst that comes again within the hold orders (and restarts)
it; replicas still starting keep it from running down, so the hold counts from when they are up (replicas
stuck unschedulable do not: they may never come). Knative's scale-down delay and the HPA's stabilization
window are fixed forms of the same trade; decision N ties it to the cold start the policy measures
(docs/benchmarks.md, "Why N").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoscaler.core.signals import LatencyHistogram, ReplicaCounts
from autoscaler.core.stages.capacity import STEADY_SECONDS
from autoscaler.core.stages.stabilize import History, remember_max, since
from autoscaler.policy import PolicySpec

BURST_LOAD_SHARE = 0.5  # at most this share of the planned load per replica: the queue came from bursts
MAX_STEP = 4.0  # at most 4× the ready replicas from one window
_LOW, _HIGH = 1e-3, 4000.0  # the wait is reported within [1 ms, 4000 s]
_NUDGE, _NUDGES = 1e-12, 8  # relative steps up past a rounding error, at most this many


@dataclass(frozen=True, slots=True)
class Burst:
    replicas: int
    wait_seconds: float | None  # queue time at the SLO's quantile in this window (None: not judged)

    def explain(self) -> dict[str, float]:
        out: dict[str, float] = {"burst": self.replicas}
        if self.wait_seconds is not None:
            out["burst_wait_s"] = round(self.wait_seconds, 3)
        return out


def wait_at(hist: LatencyHistogram, quantile: float) -> float | None:
    """The latency the share `quantile` of the histogram's requests stayed within (`LatencyHistogram.quantile`,
    the inverse of `share_within`), within [_LOW, _HIGH]: _HIGH when even that many did not stay within the
    last finite bound, None when it holds nothing."""
    if not hist.total > 0:
        return None
    wait = hist.quantile(quantile)
    if wait is None or not wait < _HIGH:
        return _HIGH
    wait = max(_LOW, wait)
    # The closed form can land a rounding error under the share it inverts: step up to where it holds.
    for _ in range(_NUDGES):
        share = hist.share_within(wait)
        if share is not None and share >= quantile:
            break
        wait = min(_HIGH, wait * (1.0 + _NUDGE))
    return wait


def burst(policy: PolicySpec, hist: LatencyHistogram | None, fresh: bool, ready: int, served: float,
          usable: float, steady_since: float | None, now: float) -> Burst:
    """Replicas for the bursts this window queued (0 when it judged none; see the module docstring).
    `fresh`: every signal the decision read this tick could be trusted."""
    none = Burst(0, None)
    if (not fresh or ready <= 0 or hist is None or hist.age_seconds > policy.metrics.staleness_seconds
            or hist.total < policy.capacity.slo_feedback.min_requests):
        return none
    # The cheap tests first: most ticks end here.
    if served / ready > BURST_LOAD_SHARE * usable or steady_since is None or now - steady_since < STEADY_SECONDS:
        return none
    wait = wait_at(hist, policy.slo.quantile)
    if wait is None or now - steady_since < STEADY_SECONDS + wait:
        return none
    budget = policy.slo.queue_budget_seconds
    if not wait > budget:
        return Burst(0, wait)
    return Burst(math.ceil(ready * min(MAX_STEP, wait / budget)), wait)


@dataclass(frozen=True, slots=True)
class BurstHold:
    replicas: int  # the most burst replicas ordered within the hold (0: none held)
    history: History  # (time, replicas) to remember, oldest first

    def explain(self) -> dict[str, float]:
        return {"burst_held": self.replicas} if self.replicas else {}


def hold(history: History, now: float, ordered: int, replicas: ReplicaCounts, hold_seconds: float) -> BurstHold:
    """The burst replicas to keep: the most ordered within the last `hold_seconds` (one cold start), counted
    from when they are up: while replicas are starting (not stuck unschedulable) and fewer than that are
    ready, the order is renewed (see the module docstring)."""
    kept = since(history, now - hold_seconds, now)
    if ordered > 0:
        kept = remember_max(kept, now, ordered)
    level = max((r for _, r in kept), default=0)
    coming = len(replicas.starting) - replicas.unschedulable
    if level > replicas.ready and coming > 0:
        kept = remember_max(kept, now, level)
    return BurstHold(level, kept)
