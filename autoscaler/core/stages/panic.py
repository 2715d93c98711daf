"""Panic: the SLO is already breached (p90 queue time or TTFT over the SLO × queueTimeRatio). Panic lasts
holdSeconds after the last breach; while it lasts, scale-up takes the larger panic step and scale-down waits.
A quantile the decision cannot read (stale, absent, implausible) is no breach; readings holds scale-down then."""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.policy import PolicySpec


@dataclass(frozen=True, slots=True)
class Panic:
    active: bool
    until: float | None  # kept in the state while active


def panic(policy: PolicySpec, queue_time_p90: float | None, ttft_p90: float | None, previous_until: float | None,
          now: float) -> Panic:
    spec = policy.scale_up.panic
    # A panic never lasts longer than holdSeconds from now, even if the clock went backwards since it began.
    until = min(previous_until, now + spec.hold_seconds) if previous_until is not None else None
    if spec.enabled:
        slo, ratio = policy.slo, spec.queue_time_ratio
        queue_breached = queue_time_p90 is not None and queue_time_p90 > slo.queue_budget_seconds * ratio
        ttft_breached = ttft_p90 is not None and slo.ttft_seconds is not None and ttft_p90 > slo.ttft_seconds * ratio
        if queue_breached or ttft_breached:
            until = now + spec.hold_seconds
    active = until is not None and now < until
    return Panic(active, until if active else None)
