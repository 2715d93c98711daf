"""Bounds on every policy field, and YAML that would be silently misread (issue 11)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from autoscaler.cli import main
from autoscaler.crd import crd
from autoscaler.policy import PolicySpec, is_time_zone
from autoscaler.policy_loader import PolicyError, load_policies_text, parse_policy

BASE = Path(__file__).resolve().parents[3] / "policies" / "chat-deployment.yaml"


def _spec(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaler.inference.dev/v1alpha1",
        "kind": "ModelScalingPolicy",
        "metadata": {"name": "p"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "model": {"name": "m"},
                 **extra},
    }


def _problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(PolicyError) as e:
        parse_policy(doc)
    return [p.path for p in e.value.problems]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"replicas": {"floorSchedule": [{"start": "08:00", "end": "09:00", "minReplicas": 1,
                                          "timezone": "America"}]}}, "spec.replicas.floorSchedule[0].timezone"),
        ({"replicas": {"floorSchedule": [{"start": "08:00", "end": "09:00", "minReplicas": 1,
                                          "timezone": "A" * 300}]}}, "spec.replicas.floorSchedule[0].timezone"),
        ({"replicas": {"floorSchedule": [{"start": "08:00", "end": "09:00", "minReplicas": 1,
                                          "timezone": "../etc/x"}]}}, "spec.replicas.floorSchedule[0].timezone"),
        ({"forecast": {"historySeconds": 30, "stepSeconds": 60}}, "spec.forecast.historySeconds"),
        ({"forecast": {"historySeconds": 300, "stepSeconds": 60}}, "spec.forecast"),
        ({"forecast": {"historySeconds": 1209600, "stepSeconds": 1}}, "spec.forecast"),
        ({"forecast": {"stepSeconds": 1e-6}}, "spec.forecast.stepSeconds"),
        ({"forecast": {"stepSeconds": 0.0002}}, "spec.forecast.stepSeconds"),
        ({"coldStart": {"imagePullSeconds": 1e308}}, "spec.coldStart.imagePullSeconds"),
        ({"coldStart": {"spread": 3}}, "spec.coldStart.spread"),
        ({"scaleUp": {"maxStepPercent": 1.7e308}}, "spec.scaleUp.maxStepPercent"),
        ({"scaleUp": {"panic": {"maxStepPercent": 1001}}}, "spec.scaleUp.panic.maxStepPercent"),
        ({"scaleDown": {"stabilizationWindowSeconds": 86401}}, "spec.scaleDown.stabilizationWindowSeconds"),
        ({"intervalSeconds": 0.05}, "spec.intervalSeconds"),
        ({"replicas": {"max": 10**400}}, "spec.replicas.max"),
        ({"metrics": {"stalenessSeconds": float("inf")}}, "spec.metrics.stalenessSeconds"),
        ({"slo": {"ttftSeconds": float("nan")}}, "spec.slo.ttftSeconds"),
        ({"slo": {"quantile": 1.0}}, "spec.slo.quantile"),
    ],
)
def test_unphysical_values_are_rejected_naming_the_field(extra: dict[str, Any], field: str) -> None:
    assert field in _problems(_spec(**extra))


def test_time_zones_are_checked_with_zoneinfo() -> None:
    assert is_time_zone("Europe/Berlin") and is_time_zone("UTC") and is_time_zone("America/Argentina/Salta")
    for bad in ("America", "Europe/", "/etc/localtime", "..", "A" * 300, "", "Europe/Nowhere"):
        assert not is_time_zone(bad), bad


def _numbers(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = []
    if isinstance(node, dict):
        if node.get("type") in ("number", "integer"):
            out.append((path, node))
        for k, v in node.items():
            out.extend(_numbers(v, f"{path}.{k}"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_numbers(v, f"{path}[{i}]"))
    return out


def test_every_number_in_the_crd_is_bounded_on_both_sides() -> None:
    spec = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    numbers = _numbers(spec)
    assert len(numbers) > 40
    for path, node in numbers:
        assert "minimum" in node and "maximum" in node, path


def test_every_string_and_list_in_the_crd_is_bounded() -> None:
    spec = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and "enum" not in node:
                assert "maxLength" in node, path
            if node.get("type") == "array":
                assert "maxItems" in node, path
            if node.get("type") == "object" and "additionalProperties" in node:
                assert "maxProperties" in node, path
            for k, v in node.items():
                walk(v, f"{path}.{k}")

    walk(spec, "spec")


def test_cross_field_rules_are_in_the_crd_as_cel() -> None:
    spec = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = [r["rule"] for r in spec["properties"]["forecast"]["x-kubernetes-validations"]]
    assert any("self.historySeconds >= 10.0 * self.stepSeconds" in r for r in rules)
    assert any("self.min <= self.max" in r["rule"] for r in spec["properties"]["replicas"]["x-kubernetes-validations"])


def test_the_chart_crd_is_the_generated_one() -> None:
    import yaml

    chart = Path(__file__).resolve().parents[3] / "charts/inference-autoscaler/crds/modelscalingpolicies.yaml"
    assert yaml.safe_load(chart.read_text()) == crd()


def test_the_largest_accepted_values_still_decide_quickly() -> None:
    """The bounds were chosen so that the extreme valid policy costs little: one decide, well under 1 s."""
    from autoscaler.core import CoreState, Signals, decide, forecast_config
    from autoscaler.core.signals import ClusterFacts, Measured, ReplicaCounts

    stage = 7200
    spec = PolicySpec.model_validate(_spec(
        forecast={"stepSeconds": 1, "historySeconds": 100_000, "quantile": 0.999, "refitEverySeconds": 60},
        coldStart={"spread": 1, "quantile": 0.999, "schedulingSeconds": stage, "nodeProvisioningSeconds": stage,
                   "imagePullSeconds": stage, "weightLoadSeconds": stage, "warmupSeconds": stage},
        scaleUp={"maxStepPercent": 1000, "maxStepReplicas": 10000, "panic": {"maxStepPercent": 1000}},
        replicas={"min": 0, "max": 10000},
    )["spec"])
    sig = Signals(request_rate=Measured(1e3, 1.0), prompt_tokens_rate=Measured(1e7, 1.0),
                  generation_tokens_rate=Measured(1e7, 1.0), running=Measured(1e4, 1.0),
                  waiting=Measured(1e4, 1.0), kv_cache_usage=Measured(1.0, 1.0),
                  replicas=ReplicaCounts(10000, 10000), cluster=ClusterFacts(0, False))
    state, now, cfg = CoreState(), 1.7e9, forecast_config(spec)
    worst = 0.0
    for i in range(20):
        t0 = time.perf_counter()
        state = decide(spec, sig, state, now + 60 * i, cfg).state
        worst = max(worst, time.perf_counter() - t0)
    assert worst < 1.0, worst


# -- YAML ------------------------------------------------------------------------------------------


def _load_error(text: str) -> str:
    with pytest.raises(PolicyError) as e:
        load_policies_text(text, "p.yaml")
    assert len(e.value.problems) == 1
    return str(e.value.problems[0])


def _base() -> str:
    return BASE.read_text()


def test_an_explicit_tag_that_cannot_be_read_is_one_line_with_line_and_field() -> None:
    assert _load_error(_base().replace("max: 60", "max: !!int x")) == (
        "p.yaml:31: spec.replicas.max: cannot read 'x' as !!int; remove the tag or fix the value"
    )
    assert _load_error(_base().replace("max: 60", "max: !!timestamp x")).startswith(
        "p.yaml:31: spec.replicas.max: cannot read 'x' as !!timestamp"
    )


def test_a_date_is_text_as_kubectl_reads_it_not_a_traceback() -> None:
    text = _base().replace("name: llama-8b-chat\n  namespace", "name: 2024-02-30\n  namespace")
    assert load_policies_text(text)[0].metadata.name == "2024-02-30"


def test_duplicate_keys_are_an_error() -> None:
    assert _load_error(_base().replace("max: 60", "max: 10\n    max: 5000")) == (
        "p.yaml:32: spec.replicas.max: duplicate key (first at line 31); remove one of them"
    )


def test_an_unquoted_time_is_not_read_as_a_base_60_number() -> None:
    msg = _load_error(_base().replace('start: "08:00"', "start: 18:30"))
    assert msg.startswith("p.yaml:34: spec.replicas.floorSchedule[0].start: unquoted 18:30")
    assert 'quote it: "18:30"' in msg


def test_aliases_are_rejected_at_once_instead_of_expanded() -> None:
    laughs = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
    )
    t0 = time.perf_counter()
    msg = _load_error(laughs)
    assert time.perf_counter() - t0 < 0.5
    assert msg == "p.yaml:2: YAML: YAML aliases (*a) are not allowed in a policy: write the value out"


def test_validate_prints_one_line_per_problem_and_no_traceback(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(_base().replace("max: 60", "max: !!int x"))
    res = CliRunner().invoke(main, ["validate", str(f)])
    assert res.exit_code == 1
    assert res.exception is None or isinstance(res.exception, SystemExit)
    lines = res.output.strip().splitlines()
    assert lines[0] == f"{f}:31: spec.replicas.max: cannot read 'x' as !!int; remove the tag or fix the value"
