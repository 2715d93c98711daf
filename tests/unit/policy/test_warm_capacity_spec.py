"""spec.warmCapacity: defaults, and clear errors naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.crd import crd
from autoscaler.policy_loader import PolicyError, parse_policy

BASE: dict[str, Any] = {
    "apiVersion": "autoscaler.inference.dev/v1alpha1", "kind": "ModelScalingPolicy",
    "metadata": {"name": "a", "namespace": "b"},
    "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "model": {"name": "m"}},
}


def _with(warm: dict[str, Any]) -> dict[str, Any]:
    return {**BASE, "spec": {**BASE["spec"], "warmCapacity": warm}}


def test_off_by_default_and_accepts_a_full_spec() -> None:
    assert not parse_policy(BASE).spec.warm_capacity.enabled
    w = parse_policy(_with({"enabled": True, "minSlots": 1, "maxSlots": 4, "priorityClassName": "my-warm",
                            "image": "vllm/vllm-openai:v0.6", "weightsCachePath": "/var/cache/models"})).spec
    assert w.warm_capacity.prestages_weights and w.warm_capacity.max_slots == 4


@pytest.mark.parametrize(("warm", "path", "words"), [
    ({"minSlots": 3, "maxSlots": 1}, "spec.warmCapacity", "minSlots (3) must be ≤ maxSlots (1)"),
    ({"priorityClassName": "Not_A_Name"}, "spec.warmCapacity.priorityClassName", "not a PriorityClass name"),
    ({"weightsCachePath": "models"}, "spec.warmCapacity.weightsCachePath", "must be an absolute path on the node"),
    ({"minSlots": -1}, "spec.warmCapacity.minSlots", "greater than or equal to 0"),
    ({"slots": 2}, "spec.warmCapacity.slots", ""),
])
def test_bad_fields_are_named(warm: dict[str, Any], path: str, words: str) -> None:
    with pytest.raises(PolicyError) as e:
        parse_policy(_with(warm))
    assert any(p.path == path and words in p.message for p in e.value.problems), e.value.problems


def test_the_crd_checks_the_slot_order_as_the_model_does() -> None:
    schema = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    warm = schema["properties"]["spec"]["properties"]["warmCapacity"]
    rules = [v["rule"] for v in warm["x-kubernetes-validations"]]
    assert rules == ["!has(self.minSlots) || !has(self.maxSlots) || self.minSlots <= self.maxSlots"]
    assert warm["properties"]["priorityClassName"]["pattern"].startswith("^[a-z0-9]")
    assert warm["properties"]["weightsCachePath"]["pattern"] == "^/"
