"""The policy's status: what was decided and why, what was learned, and the core's state for restarts."""

from __future__ import annotations

from typing import Any

from autoscaler.controller.conditions import (
    CONFLICT,
    METRICS_AVAILABLE,
    READY,
    SCALING_ACTIVE,
    SCALING_LIMITED,
    SLO_INFEASIBLE,
    TARGET_FOUND,
    get_condition,
    set_condition,
)
from autoscaler.core import CoreState, Decision, Reason
from autoscaler.core.coldstart import stage_estimate
from autoscaler.core.stages.feasibility import infeasible
from autoscaler.observe.timefmt import format_time
from autoscaler.policy import PolicySpec
from autoscaler.targets import ScaleReading


def _num(x: float | None, digits: int = 3) -> float | None:
    return None if x is None or x != x else round(float(x), digits)


def decision_status(decision: Decision, now: float, dry_run: bool, applied: bool) -> dict[str, Any]:
    return {
        **decision.why(),
        "components": {k: _num(v, 4) for k, v in decision.components.items()},
        "time": format_time(now),
        "dryRun": dry_run,
        "applied": applied,
    }


def slo_infeasible_condition(spec: PolicySpec, decision: Decision) -> tuple[bool | None, str, str]:
    """(status, reason, message) of the SLOInfeasible condition: True when the share of recent requests whose
    TTFT SLO no replica count can meet exceeds the SLO's error budget, Unknown when the share is unknown."""
    share = decision.slo_infeasible_share
    if share is None:
        return None, "ShareUnknown", decision.slo_infeasible_message or "the infeasible share is unknown"
    budget = 1.0 - spec.slo.quantile
    if infeasible(spec, share):
        return True, "PrefillExceedsBudget", (
            f"{decision.slo_infeasible_message}; that is over the SLO's error budget ({100 * budget:g}%), so "
            f"at most {100 * (1 - share):.1f}% of requests can meet it: raise slo.ttftSeconds or set "
            f"slo.ttftSecondsPerKiloPromptTokens")
    return False, "Feasible", (f"{decision.slo_infeasible_message} (within the SLO's {100 * budget:g}% error "
                               f"budget)" if share > 0 else decision.slo_infeasible_message)


def slo_infeasible_event(previous: dict[str, Any] | None,
                         current: dict[str, Any] | None) -> tuple[str, str, str] | None:
    """(type, reason, message) of the event for a transition of the SLOInfeasible condition from `previous` to
    `current`, or None: into True (from anything) is a Warning, from True to False a Normal "SLOFeasible";
    Unknown and unchanged are quiet."""
    before = previous.get("status") if previous else None
    after, message = (current.get("status"), current.get("message", "")) if current else (None, "")
    if after == "True" and before != "True":
        return "Warning", "SLOInfeasible", message
    if after == "False" and before == "True":
        return "Normal", "SLOFeasible", message
    return None


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


# -- when to write the status ---------------------------------------------------------------------------
# A status patch per policy per tick is most of a quiet controller's API traffic. The status is written when
# something a user or a restart needs has changed (`fingerprint`), and otherwise only when the stored core
# state has reached its maximum age (ControllerConfig.state_max_age_seconds).


def _cond_key(c: Any) -> tuple[Any, ...]:
    return (c.get("type"), c.get("status"), c.get("reason"), c.get("observedGeneration")) if isinstance(c, dict) else ()


def status_fingerprint(status: dict[str, Any]) -> tuple[Any, ...]:
    """What a user or a restart reads from the status, without what moves every tick (the decision's time,
    message and components, the forecast figures, the state's timestamps and condition messages)."""
    last = status.get("lastDecision") or {}
    learned = status.get("learned") or {}
    cold = learned.get("coldStart") or {} if isinstance(learned, dict) else {}
    samples = tuple(sorted((k, v.get("samples")) for k, v in cold.items() if isinstance(v, dict)))
    capacity = (learned.get("capacity") or {}).get("samples") if isinstance(learned, dict) else None
    return (
        status.get("observedGeneration"),
        status.get("desiredReplicas"),
        status.get("currentReplicas"),
        status.get("readyReplicas"),
        status.get("lastScaleTime"),
        status.get("coldStartWatermark"),
        tuple(last.get(k) for k in ("reason", "binding", "panic", "dryRun", "applied"))
        if isinstance(last, dict)
        else (),
        tuple(_cond_key(c) for c in status.get("conditions") or ()),
        samples,
        capacity,
        tuple((e.get("node"), e.get("replicas"), e.get("replacementsReady"), e.get("safe"))
              for e in status.get("drain") or () if isinstance(e, dict)),
        tuple(sorted((status.get("warmCapacity") or {}).items())) if isinstance(status.get("warmCapacity"), dict)
        else None,
        (status.get("deletionCost") or {}).get("message") if isinstance(status.get("deletionCost"), dict) else None,
    )


def state_fingerprint(state: CoreState | None) -> tuple[Any, ...]:
    """The parts of the core's state whose loss would change a decision after a restart: the set of values in
    the stabilization and rate-limit windows, panic, the SLO load factor (2 decimals), whether a forecast
    history exists, and the learned samples (counted in `status_fingerprint`). Timestamps of repeated values
    and slowly moving averages are left to the age bound."""
    if state is None:
        return ()
    return (
        tuple(sorted({r for _, r in state.recommendations})),
        tuple(sorted({r for _, r in state.decisions})),
        state.panic_until is not None,
        round(state.load_factor, 2),
        state.forecast is not None or state.forecast_seed is not None,
        len(state.coldstart.samples),
        len(state.capacity.samples),
    )


# A decision the policy's limits shaped: ScalingLimited is True.
LIMITED = {Reason.SCALE_UP_RATE_LIMITED, Reason.SCALE_DOWN_MAX, Reason.UNSCHEDULABLE}


def decision_conditions(conds: list[dict[str, Any]], spec: PolicySpec, d: Decision, reading: ScaleReading, *,
                        desc: str, ready: int, starting: int, dry_why: str | None, source_error: str | None,
                        now: float, gen: Any) -> list[dict[str, Any]]:
    """The policy's conditions after decision `d` on the target `desc` read as `reading`: TargetFound,
    Conflict (once it was ever set), MetricsAvailable, ScalingActive, Ready, ScalingLimited and SLOInfeasible.
    `dry_why` says why the target is not written (None: it is); `source_error` is the metric source's error,
    shown while metrics are missing."""
    blocked = reading.blocked
    conds = set_condition(conds, TARGET_FOUND, True, "TargetFound",
                          f"{desc}: {reading.replicas} replicas, {ready} ready, {starting} starting", now, gen)
    conflicted = blocked is not None and blocked.reason == "Conflict"
    if conflicted or get_condition(conds, CONFLICT) is not None:
        conds = set_condition(conds, CONFLICT, conflicted, "OtherOwner" if conflicted else "SoleOwner",
                              blocked.message if conflicted and blocked is not None
                              else "no other autoscaler scales the target", now, gen)
    if d.metrics_fresh:
        conds = set_condition(conds, METRICS_AVAILABLE, True, "MetricsFresh", "demand metrics are fresh", now, gen)
    else:
        conds = set_condition(conds, METRICS_AVAILABLE, False, "MetricsMissing", source_error or d.message, now, gen)
    if blocked is not None:
        conds = set_condition(conds, SCALING_ACTIVE, False, blocked.reason, blocked.message, now, gen)
        conds = set_condition(conds, READY, False, blocked.reason, blocked.message, now, gen)
    elif dry_why is not None:
        conds = set_condition(conds, SCALING_ACTIVE, False, "DryRun",
                              f"dry run ({dry_why}): decisions are recorded, the target is not written", now, gen)
        conds = set_condition(conds, READY, True, "Reconciled", "decisions are being made", now, gen)
    else:
        conds = set_condition(conds, SCALING_ACTIVE, True, "ValidDecision", d.message, now, gen)
        conds = set_condition(conds, READY, True, "Reconciled", "decisions are being made and applied", now, gen)
    limited = d.reason in LIMITED or d.binding == "max"
    conds = set_condition(conds, SCALING_LIMITED, limited, d.reason.value if limited else "DesiredWithinRange",
                          d.message if limited else "the desired count is within the policy's limits", now, gen)
    return set_condition(conds, SLO_INFEASIBLE, *slo_infeasible_condition(spec, d), now, gen)
