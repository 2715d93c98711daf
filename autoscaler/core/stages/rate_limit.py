"""Rate limits: how far one period may move the count.

Scale-up: from the lowest count decided within scaleUp.periodSeconds, by at least maxStepReplicas or
maxStepPercent (panic's larger percent while the SLO is breached). Scale-down: from the highest count
decided within scaleDown.periodSeconds, by at most max(maxStepReplicas, maxStepPercent), never below
the stabilized recommendation nor above the current count.
"""

from __future__ import annotations

import math

from autoscaler.core.reason import Reason
from autoscaler.core.stages.stabilize import History
from autoscaler.policy import PolicySpec

_UP_REASON = {"predictive": Reason.SCALE_UP_PREDICTIVE, "floor": Reason.SCALE_UP_FLOOR}


def scale_up(policy: PolicySpec, decisions: History, now: float, current: int, raw: int, binding: str,
             panic: bool) -> tuple[int, Reason]:
    up = policy.scale_up
    ref = min([current, *(r for t, r in decisions if t >= now - up.period_seconds)])
    pct = up.panic.max_step_percent if panic else up.max_step_percent
    allowed = ref + max(up.max_step_replicas, math.ceil(ref * pct / 100.0))
    desired = min(raw, max(allowed, current))
    if desired < raw:
        return desired, Reason.SCALE_UP_RATE_LIMITED
    return desired, _UP_REASON.get(binding, Reason.SCALE_UP_REACTIVE)


def limit(policy: PolicySpec, decisions: History, now: float, current: int, raw: int, binding: str,
          stabilized: int, panic: bool, stuck: int) -> tuple[int, Reason]:
    """Where this tick may move the count: up towards `raw` by the scale-up step (or hold while replicas are
    stuck unschedulable), down only to the stabilized recommendation by the scale-down step and not in panic."""
    if raw > current:
        desired, reason = scale_up(policy, decisions, now, current, raw, binding, panic)
        return (current, Reason.UNSCHEDULABLE) if stuck else (desired, reason)
    if stabilized >= current:
        return current, (Reason.STEADY if raw == current else Reason.STABILIZING)
    if panic:
        return current, Reason.PANIC_HOLD
    return scale_down(policy, decisions, now, current, stabilized), Reason.SCALE_DOWN


def scale_down(policy: PolicySpec, decisions: History, now: float, current: int, stabilized: int) -> int:
    down = policy.scale_down
    ref = max([current, *(r for t, r in decisions if t >= now - down.period_seconds)])
    step = max(down.max_step_replicas, math.floor(ref * down.max_step_percent / 100))
    # Never above the current count: a step counted from a higher count decided earlier (that the target did
    # not take: a dry run, another writer) is no reason to grow (Kubernetes' HPA caps it the same way).
    return min(current, max(stabilized, ref - step, current - step))
