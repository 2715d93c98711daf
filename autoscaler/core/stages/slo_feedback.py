"""SLO feedback: the share of recent requests that met the SLO, and the load factor it drives."""

from __future__ import annotations

import math

from autoscaler.core.signals import Signals
from autoscaler.policy import PolicySpec

# SLO misses count towards the load factor only once the fleet has been settled this long: latency
# histograms cover a rate window (~1 min) and include requests that queued before capacity arrived.
SETTLED_SECONDS = 120.0


def slo_attainment(policy: PolicySpec, signals: Signals, stale: float) -> float | None:
    """Share of recent requests that met the SLO (the lower of TTFT and queue time when both are set),
    or None when no fresh histogram has enough requests to judge."""
    slo = policy.slo
    need = policy.capacity.slo_feedback.min_requests
    shares = []
    for hist, limit in ((signals.ttft_histogram, slo.ttft_seconds),
                        (signals.queue_time_histogram, slo.queue_time_seconds)):
        if hist is None or limit is None or hist.age_seconds > stale or hist.total < need:
            continue
        share = hist.share_within(limit)
        if share is not None:
            shares.append(share)
    return min(shares) if shares else None


def load_factor(policy: PolicySpec, attained: float | None, h: float, since_last_tick: float,
                settled_for: float) -> float:
    """The SLO-feedback factor on the load each replica is planned for (see SLOFeedbackSpec).

    Misses while the fleet has been settled for a while (nothing starting, no queue left from a
    scale-up) raise it with the shortfall, up to ×1.65 a minute at a full miss. Attainment with half
    the error budget to spare lowers it with e-folding time `relaxSeconds`. In between it holds."""
    spec = policy.capacity.slo_feedback
    if not spec.enabled:
        return 1.0
    dt = min(since_last_tick, 4 * policy.interval_seconds)
    if attained is None or dt <= 0:
        return h
    target = policy.slo.quantile
    budget = max(1e-6, 1.0 - target)
    if attained < target:
        if settled_for >= SETTLED_SECONDS:
            h *= math.exp(0.5 * min(1.0, (target - attained) / budget) * dt / 60.0)
    elif attained >= target + budget / 2:
        h *= math.exp(-dt / spec.relax_seconds)
    return min(spec.max, max(spec.min, h))
