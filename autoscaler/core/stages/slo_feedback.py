"""SLO feedback: the share of recent requests that met the SLO, and the load factor it drives."""

from __future__ import annotations

import math

from autoscaler.core.signals import Signals
from autoscaler.core.slo import ttft_budget
from autoscaler.policy import PolicySpec

# SLO misses count towards the load factor only once the fleet has been settled this long: latency
# histograms cover a rate window (~1 min) and include requests that queued before capacity arrived.
SETTLED_SECONDS = 120.0
# Misses while replicas start (demand rose faster than they come up) are the ones the settled windows never
# see, and on traffic with minute-scale rises they are most of the SLO's misses. They raise the factor only
# while the SLO's error budget over hours (autoscaler/core/slo_budget.py, starts included) burns at
# BURNING times its rate or more, and then at TRANSIENT_RATE_SHARE of the settled rate: one late start is
# the price of a cold start, a budget burnt by them says the fleet keeps too little headroom for the rises
# it meets. The factor then relaxes only once the budget is well on track (burn under RELAX_BELOW_BURN):
# the headroom stays while the hours' misses still say it is needed (docs/benchmarks.md, decision change I),
# and only on windows that used at most RELAX_MISS_SHARE of the error budget. The headroom over the target
# utilization (a factor over 1) is let go sooner: once the last minutes' burn (SloBudget.recent_burn) is
# under RELAX_BELOW_BURN too, the burning has stopped, and one episode's misses no longer hold a fleet twice
# the size for the hours it takes the faded budget to forget them (decision change AG). Planning hotter than
# the target (a factor under 1) still waits for the hours' budget. With misses counted as they
# happened (LatencyHistogram.share_within) a window at half the budget is not calm: it is near the knee
# (decision change L). Nor do misses while starting raise it in an episode whose load went past what its
# whole range could have covered (`within_headroom`): a step no headroom the factor can buy would have
# met teaches it nothing about the rises it can meet (decision change O).
BURNING = 2.0
TRANSIENT_RATE_SHARE = 0.1
RELAX_BELOW_BURN = 0.5
RELAX_MISS_SHARE = 0.1


def slo_attainment(policy: PolicySpec, signals: Signals, stale: float) -> float | None:
    """Share of recent requests that met the SLO (the lower of TTFT and queue time when both are set),
    or None when no fresh histogram has enough requests to judge.

    TTFT misses while nothing queues and queue time is within its budget are prefill-bound (long prompts
    on an idle replica), not capacity-bound: more replicas would not remove them, so they are left out
    (see `prefill_bound`). A length-dependent TTFT SLO is judged at the budget of the mean prompt."""
    slo = policy.slo
    need = policy.capacity.slo_feedback.min_requests
    ttft_limit = ttft_budget(slo, mean_prompt_tokens(signals, stale) or 0.0) if slo.ttft_seconds is not None else None
    if prefill_bound(policy, signals, stale):
        ttft_limit = None
    shares = []
    for hist, limit in ((signals.ttft_histogram, ttft_limit),
                        (signals.queue_time_histogram, slo.queue_time_seconds)):
        if hist is None or limit is None or hist.age_seconds > stale or hist.total < need:
            continue
        share = hist.share_within(limit)
        if share is not None:
            shares.append(share)
    return min(shares) if shares else None


def mean_prompt_tokens(signals: Signals, stale: float) -> float | None:
    """Mean prompt length of recent requests (prompt tokens per second / requests per second)."""
    tokens, requests = signals.prompt_tokens_rate.fresh(stale), signals.request_rate.fresh(stale)
    if tokens is None or requests is None or not requests > 0 or tokens < 0:
        return None
    return tokens / requests


def prefill_bound(policy: PolicySpec, signals: Signals, stale: float) -> bool:
    """Nothing queues (waiting < 1 request, fresh) and queue time is within its budget for the SLO's
    quantile of requests (the queue-time histogram, else its p90): any TTFT miss now is prefill, which
    capacity does not shorten. False when either is unknown."""
    waiting = signals.waiting.fresh(stale)
    if waiting is None or waiting >= 1.0:
        return False
    budget = policy.slo.queue_budget_seconds
    hist = signals.queue_time_histogram
    if hist is not None and hist.age_seconds <= stale and hist.total >= policy.capacity.slo_feedback.min_requests:
        share = hist.share_within(budget)
        if share is not None:
            return share >= policy.slo.quantile
    p90 = signals.queue_time_p90_seconds.fresh(stale)
    return p90 is not None and p90 <= budget


def within_headroom(policy: PolicySpec, offered: float, ready: int, h: float, capacity_factor: float) -> bool:
    """Whether a fleet sized with the factor at its maximum would have carried `offered` within the capacity at
    the SLO: the `ready` replicas, scaled by max ÷ `h` (what raising the factor from `h` to its maximum adds),
    at no more than `capacity_factor` each. True when nothing is ready to judge."""
    if ready <= 0:
        return True
    return offered / ready * h / policy.capacity.slo_feedback.max <= capacity_factor


def relax_floor(burn: float | None, recent_burn: float | None) -> float | None:
    """How low a calm window may relax the load factor: to its minimum while the hours' budget is well on
    track (or unknown), to 1 (the target utilization, no headroom over it) while only the last minutes' is;
    None (hold) while both burn."""
    if burn is None or burn < RELAX_BELOW_BURN:
        return 0.0
    return 1.0 if recent_burn is not None and recent_burn < RELAX_BELOW_BURN else None


def load_factor(policy: PolicySpec, attained: float | None, h: float, since_last_tick: float,
                settled_for: float, burn: float | None = None, at_plan: bool = True,
                coverable: bool = True, recent_burn: float | None = None) -> float:
    """The SLO-feedback factor on the load each replica is planned for (see SLOFeedbackSpec).

    Misses while the fleet has been settled for a while (nothing starting, no request waiting: on a loaded
    fleet seldom, `Capacity.settled_since`) raise it with the shortfall, up to ×1.65 a minute at a full
    miss; misses while it is not settled raise it at a tenth of that pace, and only while the hours' error
    budget burns at twice its rate or more (`burn`: SloBudget.burn, None while too few requests were judged).
    Misses while not settled in an episode that went past the factor's reach (`coverable` False) leave it as it
    is. A window that used at most a tenth of the error budget lowers it with e-folding time `relaxSeconds`,
    once the hours' budget burns at under half its rate and only while the fleet carries its plan (`at_plan`: a
    fleet held above it, as after a peak, has a margin the plan did not make); down to 1 only, once the last
    minutes' budget (`recent_burn`: SloBudget.recent_burn) burns at under half its rate (`relax_floor`). In
    between it holds."""
    spec = policy.capacity.slo_feedback
    if not spec.enabled:
        return 1.0
    dt = min(since_last_tick, 4 * policy.interval_seconds)
    if attained is None or dt <= 0:
        return h
    target = policy.slo.quantile
    budget = max(1e-6, 1.0 - target)
    if attained < target:
        rate = 1.0 if settled_for >= SETTLED_SECONDS else (
            TRANSIENT_RATE_SHARE if burn is not None and burn >= BURNING and coverable else 0.0)
        h *= math.exp(rate * 0.5 * min(1.0, (target - attained) / budget) * dt / 60.0)
    elif attained >= target + (1.0 - RELAX_MISS_SHARE) * budget and at_plan:
        lowest = relax_floor(burn, recent_burn)
        if lowest is not None and h > lowest:
            h = max(lowest, h * math.exp(-dt / spec.relax_seconds))
    return min(spec.max, max(spec.min, h))
