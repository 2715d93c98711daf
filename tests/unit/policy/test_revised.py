"""`revised`: a changed copy of a policy or scenario model is validated as a document is (pydantic's
`model_copy(update=...)` is not), so no flag or factor builds a model outside the bounds `validate` and the CRD
share."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from autoscaler.policy import revised
from autoscaler.policy_loader import load_policy_file
from simulations.errors import SimulationInputError
from simulations.scenario import load_scenario, revised_scenario, scenario_names

POLICIES = sorted(Path("policies").glob("*.yaml"))


@pytest.mark.parametrize("path", POLICIES, ids=lambda p: p.name)
def test_a_policy_revised_with_nothing_is_the_same_policy(path: Path) -> None:
    for doc in load_policy_file(path):
        assert revised(doc) == doc and revised(doc.spec) == doc.spec


@pytest.mark.parametrize("name", scenario_names())
def test_a_scenario_revised_with_nothing_is_the_same_scenario(name: str) -> None:
    sc = load_scenario(name)
    assert revised(sc) == sc and revised_scenario(sc, "test") == sc


def test_a_revised_field_is_checked_against_its_bounds_where_model_copy_is_not() -> None:
    cap = load_policy_file(POLICIES[0])[0].spec.capacity
    assert cap.model_copy(update={"target_utilization": 7.0}).target_utilization == 7.0  # what it replaces
    with pytest.raises(ValidationError, match="target_utilization"):
        revised(cap, target_utilization=7.0)
    with pytest.raises(ValidationError, match="finite"):
        revised(cap, prompt_tokens_per_second=float("inf"))
    assert revised(cap, target_utilization=0.5).target_utilization == 0.5


def test_a_mapping_changes_the_nested_models_fields_it_names_and_keeps_the_rest() -> None:
    spec = load_policy_file(POLICIES[0])[0].spec
    out = revised(spec, capacity={"target_utilization": 0.5})
    assert out.capacity == spec.capacity.model_copy(update={"target_utilization": 0.5})
    assert out.model_copy(update={"capacity": spec.capacity}) == spec
    with pytest.raises(ValidationError, match=r"capacity\.target_utilization"):
        revised(spec, capacity={"target_utilization": 7.0})


def test_a_revised_scenario_merges_a_nested_field_and_names_the_flag_that_broke_it() -> None:
    sc = load_scenario("azure-conv")
    assert revised_scenario(sc, "--scale", trace={"clone": 2.0}).trace == sc.trace.model_copy(update={"clone": 2.0})
    with pytest.raises(SimulationInputError) as e:
        revised_scenario(sc, "--scale", trace={"clone": 1e9})
    assert str(e.value).startswith("--scale: trace.clone: ") and "\n" not in str(e.value)
    with pytest.raises(SimulationInputError, match="cold start 'lukewarm': cold_start"):
        sc.with_cold_start("lukewarm")
