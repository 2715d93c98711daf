"""Missing demand: what the policy's onMissingMetrics asks for. None of its actions ever scales down."""

from __future__ import annotations

from autoscaler.core.floors import highest_floor
from autoscaler.policy import PolicySpec


def missing_target(policy: PolicySpec, current: int) -> int:
    """hold: the current count; floor: at least the highest scheduled floor; fixed: at least its count."""
    action = policy.on_missing_metrics
    if action.action == "floor":
        return max(current, highest_floor(policy.replicas))
    if action.action == "fixed" and action.replicas is not None:
        return max(current, action.replicas)
    return current


def zero_floor_note(policy: PolicySpec) -> str | None:
    """What `validate` says of `replicas.min: 0` (the policy is accepted): at 0 replicas no engine reports
    demand, so this stage decides alone; whether it cycles is what `missing_target` asks for at 0."""
    if policy.replicas.min != 0 or policy.scale_from_zero is not None:
        return None
    cycle = missing_target(policy, 0) >= 1
    return ("replicas.min is 0: at 0 replicas no engine reports demand, so requests arriving then are not seen "
            "and only a floorSchedule window (or a manual scale) brings the first replica back"
            + ("; with this onMissingMetrics the policy instead cycles 0 -> 1 -> 0 while idle" if cycle else "")
            + ". Scaling up from zero needs the demand in front of the engines: set scaleFromZero.query to the "
            "gateway's pending requests (docs/scale-from-zero.md), or use min 1 for a model that must answer at any "
            "time")
