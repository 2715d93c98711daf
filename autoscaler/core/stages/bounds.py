"""Bounds: which candidate binds (capped at replicas.max), replicas stuck unschedulable, and the final
clamp of the decided count into [floor, max]."""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.reason import Reason
from autoscaler.core.signals import ReplicaCounts
from autoscaler.policy import PolicySpec


@dataclass(frozen=True, slots=True)
class Bound:
    raw: int  # the recommendation before stabilization and rate limits
    binding: str  # the constraint that set it


def binding(candidates: dict[str, int], top: int) -> Bound:
    """The largest candidate (the first listed wins a tie), or replicas.max when it is larger."""
    name = max(candidates, key=lambda k: candidates[k])
    raw = candidates[name]
    return Bound(top, "max") if raw > top else Bound(raw, name)


def stuck_unschedulable(policy: PolicySpec, replicas: ReplicaCounts) -> int:
    """Replicas unschedulable past the policy's limit: reported, not piled on."""
    limit = policy.cold_start.unschedulable_limit_seconds
    return sum(1 for s in replicas.starting if s.unschedulable and s.age_seconds > limit)


def clamp(desired: int, reason: Reason, floor: int, top: int) -> tuple[int, Reason]:
    """The floor in force, then replicas.max, override whatever the limits decided."""
    if desired < floor:
        desired, reason = floor, Reason.SCALE_UP_FLOOR
    if desired > top:
        desired, reason = top, Reason.SCALE_DOWN_MAX
    return desired, reason
