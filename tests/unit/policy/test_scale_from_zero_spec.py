"""spec.scaleFromZero: defaults, bounds the CRD shares, and one-line errors naming the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from autoscaler.cli import main
from autoscaler.crd import crd
from autoscaler.policy_loader import PolicyError, parse_policy

BASE: dict[str, Any] = {
    "apiVersion": "autoscaler.inference.dev/v1alpha1", "kind": "ModelScalingPolicy",
    "metadata": {"name": "a", "namespace": "b"},
    "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "model": {"name": "m"},
             "replicas": {"min": 0, "max": 4}},
}


def _with(z: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**BASE, "spec": {**BASE["spec"], "scaleFromZero": z, **spec}}


def test_off_by_default_and_defaults_when_on() -> None:
    assert parse_policy(BASE).spec.scale_from_zero is None
    z = parse_policy(_with({"query": "sum(gateway_pending)"})).spec.scale_from_zero
    assert z is not None and (z.threshold, z.replicas, z.idle_seconds) == (0.0, 1, 900.0)


@pytest.mark.parametrize(("z", "spec", "path", "words"), [
    ({"query": "q"}, {"replicas": {"min": 1, "max": 4}}, "spec", "set replicas.min: 0 or remove scaleFromZero"),
    ({"query": "q", "replicas": 5}, {}, "spec", "scaleFromZero.replicas (5) exceeds replicas.max (4)"),
    ({"query": " \n"}, {}, "spec.scaleFromZero.query", "is blank: give PromQL"),
    ({"query": "x" * 4097}, {}, "spec.scaleFromZero.query", "at most 4096"),
    ({}, {}, "spec.scaleFromZero.query", "required"),
    ({"query": "q", "idleSeconds": 59}, {}, "spec.scaleFromZero.idleSeconds", "greater than or equal to 60"),
    ({"query": "q", "idleSeconds": 86401}, {}, "spec.scaleFromZero.idleSeconds", "less than or equal to 86400"),
    ({"query": "q", "threshold": -1}, {}, "spec.scaleFromZero.threshold", "greater than or equal to 0"),
    ({"query": "q", "threshold": float("nan")}, {}, "spec.scaleFromZero.threshold", ""),
    ({"query": "q", "replicas": 0}, {}, "spec.scaleFromZero.replicas", "greater than or equal to 1"),
    ({"query": "q", "activationThreshold": 1}, {}, "spec.scaleFromZero.activationThreshold", ""),
])
def test_bad_fields_are_named(z: dict[str, Any], spec: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy(_with(z, **spec))
    assert any(p.path == path and words in p.message for p in e.value.problems), e.value.problems


def test_the_crd_holds_the_same_bounds_and_cross_field_rules() -> None:
    spec = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    z = spec["properties"]["scaleFromZero"]
    assert z["required"] == ["query"] and z["properties"]["query"]["maxLength"] == 4096
    assert (z["properties"]["idleSeconds"]["minimum"], z["properties"]["idleSeconds"]["maximum"]) == (60, 86400)
    assert z["properties"]["replicas"]["minimum"] == 1
    messages = [r["message"] for r in spec["x-kubernetes-validations"]]
    assert "scaleFromZero needs replicas.min 0" in messages
    assert "scaleFromZero.replicas must be ≤ replicas.max" in messages


def test_validate_has_no_zero_floor_note_when_the_gateway_is_read(tmp_path: Path) -> None:
    import yaml

    f = tmp_path / "z.yaml"
    f.write_text(yaml.safe_dump(_with({"query": "sum(gateway_pending) or vector(0)"})))
    res = CliRunner().invoke(main, ["validate", str(f)])
    assert res.exit_code == 0 and ": note: " not in res.output, res.output
    f.write_text(yaml.safe_dump(BASE))  # min 0 without it: the note names the way out
    note = CliRunner().invoke(main, ["validate", str(f)]).output
    assert "set scaleFromZero.query" in note, note


@pytest.mark.parametrize("query, noted", [
    ("sum(gateway_pending)", True),
    ("sum(rate(router_requests_total[1m]))", True),
    ("sum(gateway_pending) or vector(0)", False),
    ("sum(rate(x[1m])) or on() vector(0)", False),
    ("sum(gateway_pending)\n  or\n  vector(0)", False),
])
def test_validate_notes_a_gateway_query_that_can_answer_no_series(tmp_path: Path, query: str, noted: bool) -> None:
    """An empty answer is unknown, never "no requests": without a fallback the model never proves idleness.
    The note names the consequence and the fix; the policy is accepted either way."""
    import yaml

    f = tmp_path / "z.yaml"
    f.write_text(yaml.safe_dump(_with({"query": query})))
    res = CliRunner().invoke(main, ["validate", str(f)])
    assert res.exit_code == 0, res.output
    assert ("append `or vector(0)`" in res.output) is noted, res.output
    assert ("never goes back to 0" in res.output) is noted
