"""What a decision leaves behind: the policy's conditions (`controller.status.decision_conditions`) and its metrics
(`ControllerMetrics.decided`)."""

from __future__ import annotations

from typing import Any

from autoscaler.controller.conditions import get_condition
from autoscaler.controller.status import decision_conditions
from autoscaler.core import Decision, Reason
from autoscaler.policy import PolicySpec
from autoscaler.targets import ScaleReading, TargetBlocked

SPEC = PolicySpec.model_validate({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"},
                                  "model": {"name": "m"}})


def _decision(reason: Reason = Reason.STEADY, binding: str = "reactive", fresh: bool = True) -> Decision:
    return Decision(5, 4, reason, binding, {}, 180.0, None, False, fresh, 0, "scale to 5")


def _conds(d: Decision, blocked: TargetBlocked | None = None, dry_why: str | None = None,
           conds: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    return decision_conditions(conds or [], SPEC, d, ScaleReading(4, 4, "app=x", "7", blocked), desc="Deployment x",
                               ready=3, starting=1, dry_why=dry_why, source_error="prometheus: timeout", now=100.0,
                               gen=2)


def _cond(conds: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    c = get_condition(conds, kind)
    assert c is not None, kind
    return c


def _status(conds: list[dict[str, Any]], kind: str) -> tuple[str, str]:
    c = _cond(conds, kind)
    return c["status"], c["reason"]


def test_an_applied_decision_is_ready_and_active_and_says_what_it_read() -> None:
    conds = _conds(_decision())
    assert _status(conds, "TargetFound") == ("True", "TargetFound")
    assert _cond(conds, "TargetFound")["message"] == "Deployment x: 4 replicas, 3 ready, 1 starting"
    assert _status(conds, "ScalingActive") == ("True", "ValidDecision")
    assert _status(conds, "Ready") == ("True", "Reconciled")
    assert _status(conds, "ScalingLimited") == ("False", "DesiredWithinRange")
    assert _status(conds, "MetricsAvailable") == ("True", "MetricsFresh")
    assert get_condition(conds, "Conflict") is None  # never set while no other autoscaler was seen
    assert _status(conds, "SLOInfeasible") == ("Unknown", "ShareUnknown")  # the decision knows no share
    assert all(c["observedGeneration"] == 2 for c in conds)


def test_missing_metrics_show_the_sources_error() -> None:
    conds = _conds(_decision(fresh=False))
    assert _status(conds, "MetricsAvailable") == ("False", "MetricsMissing")
    assert _cond(conds, "MetricsAvailable")["message"] == "prometheus: timeout"


def test_a_blocked_target_is_neither_active_nor_ready_and_a_conflict_clears_once_it_is_gone() -> None:
    conflict = TargetBlocked("Conflict", "HorizontalPodAutoscaler x also scales the Deployment")
    conds = _conds(_decision(), blocked=conflict)
    assert _status(conds, "Conflict") == ("True", "OtherOwner")
    assert _status(conds, "ScalingActive") == ("False", "Conflict")
    assert _status(conds, "Ready") == ("False", "Conflict")
    after = _conds(_decision(), conds=conds)
    assert _status(after, "Conflict") == ("False", "SoleOwner")
    assert _status(after, "ScalingActive") == ("True", "ValidDecision")


def test_a_dry_run_records_but_does_not_write_and_says_why() -> None:
    conds = _conds(_decision(), dry_why="spec.dryRun")
    assert _status(conds, "ScalingActive") == ("False", "DryRun")
    assert "spec.dryRun" in _cond(conds, "ScalingActive")["message"]
    assert _status(conds, "Ready") == ("True", "Reconciled")


def test_a_decision_the_limits_shaped_is_limited() -> None:
    for d in (_decision(Reason.SCALE_UP_RATE_LIMITED), _decision(Reason.SCALE_DOWN_MAX),
              _decision(Reason.UNSCHEDULABLE), _decision(binding="max")):
        conds = _conds(d)
        assert _status(conds, "ScalingLimited")[0] == "True"
        assert _cond(conds, "ScalingLimited")["message"] == "scale to 5"


def test_a_decision_sets_the_policys_gauges_and_counts_its_reason() -> None:
    from autoscaler.controller.telemetry import ControllerMetrics

    m = ControllerMetrics()
    m.decided("models", "llama", _decision(Reason.SCALE_UP_RATE_LIMITED), replicas=4, ready=3)
    m.decided("models", "llama", _decision(Reason.SCALE_UP_RATE_LIMITED), replicas=5, ready=4)
    value = m.registry.get_sample_value
    labels = {"namespace": "models", "policy": "llama"}
    assert value("inference_autoscaler_desired_replicas", labels) == 5
    assert value("inference_autoscaler_current_replicas", labels) == 5
    assert value("inference_autoscaler_ready_replicas", labels) == 4
    assert value("inference_autoscaler_lead_time_seconds", labels) == 180.0
    assert value("inference_autoscaler_forecast_work_replicas", labels) is None  # no forecast: no gauge
    assert value("inference_autoscaler_decisions_total", {**labels, "reason": "ScaleUpRateLimited"}) == 2
