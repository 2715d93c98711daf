"""Status conditions, Kubernetes style: `lastTransitionTime` changes only when `status` does."""

from __future__ import annotations

from typing import Any

from autoscaler.observe.timefmt import format_time

READY = "Ready"
SCALING_ACTIVE = "ScalingActive"
SCALING_LIMITED = "ScalingLimited"
METRICS_AVAILABLE = "MetricsAvailable"
TARGET_FOUND = "TargetFound"
CONFLICT = "Conflict"  # True: another policy, HPA or ScaledObject scales the target; we do not write it
# True: more of the recent requests than the SLO's error budget have prompts too long for their TTFT SLO even
# on an idle replica (docs/slo.md); Unknown without a prompt-length histogram.
SLO_INFEASIBLE = "SLOInfeasible"
ORDER = (READY, TARGET_FOUND, CONFLICT, METRICS_AVAILABLE, SCALING_ACTIVE, SCALING_LIMITED, SLO_INFEASIBLE)


def set_condition(
    conditions: list[dict[str, Any]],
    kind: str,
    status: bool | None,
    reason: str,
    message: str,
    now: float,
    observed_generation: int | None = None,
) -> list[dict[str, Any]]:
    """A new list with condition `kind` set (status None: "Unknown"); the others are kept as they are."""
    value = "Unknown" if status is None else "True" if status else "False"
    previous = next((c for c in conditions if c.get("type") == kind), None)
    since = previous.get("lastTransitionTime") if previous and previous.get("status") == value else None
    cond: dict[str, Any] = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message[:32768],
        "lastTransitionTime": since or format_time(now),
    }
    if observed_generation is not None:
        cond["observedGeneration"] = observed_generation
    out = [c for c in conditions if c.get("type") != kind] + [cond]
    rank = {k: i for i, k in enumerate(ORDER)}
    return sorted(out, key=lambda c: rank.get(c.get("type", ""), len(ORDER)))


def get_condition(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch that turns `old` into `new` (keys that disappeared become null).
    Returns None when nothing changed at the top level (a mapping with no differences)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for k in old:
        if k not in new:
            patch[k] = None
    for k, v in new.items():
        if k not in old:
            patch[k] = v
        elif isinstance(v, dict) and isinstance(old[k], dict):
            sub = merge_patch(old[k], v)
            if sub:
                patch[k] = sub
        elif v != old[k]:
            patch[k] = v
    return patch
