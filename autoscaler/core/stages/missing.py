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
