"""The chart's opt-in PodDisruptionBudgets for policies' targets: rendered, valid, and refused when malformed;
and no eviction rights for the controller (the operator drains)."""

from __future__ import annotations

import pytest
import yaml

from tests.integration.helm.test_chart import (
    CHART,
    K8S_VERSIONS,
    _rules,
    _template_fails,
    by_kind,
    helm,
    render,
    run,
    validate,
)

pytestmark = pytest.mark.integration

PDBS = {"podDisruptionBudgets": [
    {"name": "llama", "namespace": "models", "selector": {"matchLabels": {"app": "llama"}}, "maxUnavailable": 1},
    {"name": "qwen", "namespace": "team-a", "selector": {"matchLabels": {"app": "qwen", "tier": "gpu"}},
     "minAvailable": "80%", "unhealthyPodEvictionPolicy": "AlwaysAllow"},
]}


def test_no_pdb_unless_asked(tmp_path):
    _, docs = render(tmp_path)
    assert not by_kind(docs, "PodDisruptionBudget")


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_pdbs_render_as_asked_and_validate_strictly(tmp_path, version):
    text, docs = render(tmp_path, PDBS)
    llama, qwen = sorted(by_kind(docs, "PodDisruptionBudget"), key=lambda d: d["metadata"]["name"])
    assert llama["apiVersion"] == "policy/v1" and llama["metadata"]["namespace"] == "models"
    assert llama["spec"] == {"selector": {"matchLabels": {"app": "llama"}}, "maxUnavailable": 1}
    assert qwen["metadata"]["namespace"] == "team-a"
    assert qwen["spec"] == {"selector": {"matchLabels": {"app": "qwen", "tier": "gpu"}}, "minAvailable": "80%",
                            "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    validate(text, version)


def test_pdb_values_lint_strictly(tmp_path):
    f = tmp_path / "v.yaml"
    f.write_text(yaml.safe_dump(PDBS))
    run(helm(), "lint", "--strict", str(CHART), "-f", str(f))


@pytest.mark.parametrize("entry", [
    {"name": "a", "namespace": "m", "selector": {"matchLabels": {"app": "a"}}},  # neither
    {"name": "a", "namespace": "m", "selector": {"matchLabels": {"app": "a"}}, "minAvailable": 1, "maxUnavailable": 1},
    {"name": "a", "namespace": "m", "selector": {"matchLabels": {}}, "maxUnavailable": 1},  # selects everything
    {"name": "a", "namespace": "m", "selector": {"matchLabels": {"app": "a"}}, "maxUnavailable": "150%"},
    {"name": "a", "namespace": "m", "selector": {"matchLabels": {"app": "a"}}, "maxUnavailable": -1},
    {"name": "A_b", "namespace": "m", "selector": {"matchLabels": {"app": "a"}}, "maxUnavailable": 1},
    {"namespace": "m", "selector": {"matchLabels": {"app": "a"}}, "maxUnavailable": 1},
])
def test_malformed_pdb_entries_are_refused(tmp_path, entry):
    assert "podDisruptionBudgets" in _template_fails(tmp_path, {"podDisruptionBudgets": [entry]})


def test_the_controller_reads_nodes_and_has_no_eviction_rights(tmp_path):
    _, docs = render(tmp_path, PDBS)
    rules = _rules(docs)
    assert any("nodes" in r["resources"] and set(r["verbs"]) == {"get", "list", "watch"} for r in rules)
    for r in rules:
        assert "pods/eviction" not in r["resources"] and "poddisruptionbudgets" not in r["resources"]
        if "nodes" in r["resources"]:
            assert set(r["verbs"]) <= {"get", "list", "watch"}
