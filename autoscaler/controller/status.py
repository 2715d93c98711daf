"""The policy's status: what was decided and why, what was learned, and the core's state for restarts."""

from __future__ import annotations

from typing import Any

from autoscaler.core import CoreState, Decision
from autoscaler.core.coldstart import stage_estimate
from autoscaler.observe.timefmt import format_time
from autoscaler.policy import PolicySpec


def _num(x: float | None, digits: int = 3) -> float | None:
    return None if x is None or x != x else round(float(x), digits)


def decision_status(decision: Decision, now: float, dry_run: bool, applied: bool) -> dict[str, Any]:
    return {
        "reason": decision.reason.value,
        "binding": decision.binding,
        "message": decision.message,
        "components": {k: _num(v, 4) for k, v in decision.components.items()},
        "time": format_time(now),
        "panic": decision.panic,
        "dryRun": dry_run,
        "applied": applied,
    }


def learned_status(spec: PolicySpec, state: CoreState) -> dict[str, Any]:
    """Per stage/situation: the estimate the core plans with and how many samples it rests on."""
    cold: dict[str, Any] = {}
    for key, samples in state.coldstart.samples:
        stage, _, situation = key.partition("/")
        est = stage_estimate(spec.cold_start, state.coldstart, stage, situation)  # type: ignore[arg-type]
        cold[key] = {
            "medianSeconds": _num(est.median_seconds, 2),
            "highSeconds": _num(est.high_seconds, 2),
            "samples": len(samples),
        }
    return {
        "coldStart": cold,
        "capacity": {
            "factor": _num(state.capacity.factor(spec.capacity), 4),
            "samples": len(state.capacity.samples),
        },
    }
