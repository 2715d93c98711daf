"""Cordon and drain: leaving nodes as seen per pod, the drain check, and the controller's surge, status and
events against the fake API server."""

from __future__ import annotations

import time
from typing import Any

import pytest

from autoscaler.controller.drain import drain_check, leaving_view, need_from_status
from autoscaler.observe.nodes import leaving_reason
from tests.unit.controller.conftest import CountingSource, add_gpu_node, add_policy, make_controller, pod, status_of
from tests.unit.controller.fakeapi import FakeKube

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def node(name: str, *, cordoned: bool = False, taints: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"unschedulable": cordoned, "taints": list(taints)}}


@pytest.mark.parametrize(
    ("n", "tolerations", "why"),
    [
        (node("a"), [], None),
        (node("a", cordoned=True), [GPU_TOLERATION], "cordoned"),
        (node("a", taints=(GPU_TAINT,)), [GPU_TOLERATION], None),  # the GPU taint its pods tolerate
        (node("a", taints=(GPU_TAINT,)), [], "taint nvidia.com/gpu=present:NoSchedule"),
        (node("a", taints=({"key": "drain", "effect": "NoExecute"},)), [GPU_TOLERATION], "taint drain:NoExecute"),
        (node("a", taints=({"key": "x", "effect": "PreferNoSchedule"},)), [], None),  # only a preference
        (node("a", taints=({"key": "x", "effect": "NoExecute"},)), [{"operator": "Exists"}], None),  # tolerates all
        (node("a", taints=({"key": "x", "value": "1", "effect": "NoSchedule"},)),
         [{"key": "x", "value": "2", "effect": "NoSchedule"}], "taint x=1:NoSchedule"),  # Equal needs the value
        # Tolerated only for a while: the pod is evicted after tolerationSeconds (not-ready, unreachable).
        (node("a", taints=({"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},)),
         [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
           "tolerationSeconds": 300}], "taint node.kubernetes.io/not-ready:NoExecute"),
    ],
)
def test_a_node_is_leaving_for_a_pod_unless_it_stays_schedulable_and_tolerated(n, tolerations, why):
    assert leaving_reason(n, {"tolerations": tolerations}) == why


def _pod(name: str, node_name: str, ready: bool = True, **over: Any) -> dict[str, Any]:
    p = pod(name, "models", {"app": "llama"}, node=node_name, ready=ready)
    p["metadata"].update(over)
    return p


def test_leaving_view_counts_replicas_per_leaving_node_and_ready_ones_that_stay():
    nodes = {"a": node("a", cordoned=True), "b": node("b"), "c": node("c", taints=(GPU_TAINT,))}
    pods = [_pod("p0", "a"), _pod("p1", "a", ready=False), _pod("p2", "b"), _pod("p3", "b", ready=False),
            _pod("p4", "c"), _pod("p5", "b", deletionTimestamp="2026-01-01T00:00:00Z"), _pod("p6", "gone")]
    v = leaving_view(pods, nodes)
    # p4's pods carry no GPU toleration: node c is leaving for them; p6's node is unknown: it stays.
    assert v.leaving == {"a": ("cordoned", 2), "c": ("taint nvidia.com/gpu=present:NoSchedule", 1)}
    assert v.count == 3 and v.ready_staying == 2  # p2, p6; p5 is terminating
    assert leaving_view(pods, nodes, assume_leaving="b").leaving["b"] == ("not cordoned yet", 2)


@pytest.mark.parametrize(
    ("replicas", "elsewhere", "needed", "safe", "rn", "rr"),
    [(2, 2, 4, False, 2, 0), (2, 3, 4, False, 2, 1), (2, 4, 4, True, 2, 2), (3, 1, 1, True, 1, 1),
     (3, 0, 1, False, 1, 0), (1, 5, 0, True, 0, 0)],
)
def test_drain_check_is_safe_when_ready_replicas_that_stay_cover_the_need(replicas, elsewhere, needed, safe, rn, rr):
    c = drain_check("a", "cordoned", replicas, elsewhere, needed)
    assert (c.safe, c.replacements_needed, c.replacements_ready) == (safe, rn, rr)
    assert str(needed) in c.reason and ("keeps the SLO" in c.reason) == safe


def test_an_unknown_need_is_never_safe():
    c = drain_check("a", "cordoned", 1, 100, None)
    assert not c.safe and "unknown" in c.reason


def test_need_from_status_prefers_the_leaving_stage_then_the_recommendation():
    fresh = [{"type": "MetricsAvailable", "status": "True"}]
    assert need_from_status({"desiredReplicas": 6, "conditions": fresh, "lastDecision": {
        "reason": "ScaleUpLeaving", "components": {"leaving_need": 4, "reactive": 3}}}) == 4
    assert need_from_status({"desiredReplicas": 6, "conditions": fresh, "lastDecision": {
        "reason": "HoldStabilizing", "components": {"reactive": 3, "floor": 2, "max": 10}}}) == 3
    assert need_from_status({"desiredReplicas": 6, "conditions": [{"type": "MetricsAvailable", "status": "False"}],
                             "lastDecision": {"reason": "HoldStabilizing", "components": {"reactive": 3}}}) is None
    assert need_from_status({}) is None


# -- the controller ---------------------------------------------------------------------------------------
def _fleet(kube: FakeKube) -> None:
    for n in ("gpu-1", "gpu-2", "gpu-3"):
        add_gpu_node(kube, n)
    kube.put("apps", "deployments", {
        "metadata": {"name": "llama", "namespace": "models"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "llama"}}}, "status": {"replicas": 4},
    }, kind="Deployment")
    for i, n in enumerate(("gpu-1", "gpu-1", "gpu-2", "gpu-2")):
        kube.put("", "pods", _pod(f"llama-{i}", n), kind="Pod")
    # The floor (4) binds: low demand, so the need at the SLO is exactly 4.
    add_policy(kube, replicas={"min": 4, "max": 5})


def _cordon(kube: FakeKube, name: str) -> None:
    n = kube.get("", "nodes", "", name)
    assert n is not None
    n["spec"]["unschedulable"] = True
    kube.put("", "nodes", n, kind="Node")


def test_controller_surges_for_a_cordoned_node_reports_it_and_says_when_draining_is_safe(kube, api):
    _fleet(kube)
    now = [time.time()]
    c = make_controller(api, CountingSource(prompt_tps=1.0, gen_tps=1.0), clock=lambda: now[0])
    c.run_once()
    dep = kube.get("apps", "deployments", "models", "llama")
    assert dep is not None and dep["spec"]["replicas"] == 4 and "drain" not in status_of(kube)

    _cordon(kube, "gpu-1")
    now[0] += 20
    c.run_once()
    st = status_of(kube)
    dep = kube.get("apps", "deployments", "models", "llama")
    # Two replicas leaving, max 5: one surge replica, capped.
    assert dep is not None and dep["spec"]["replicas"] == 5
    assert st["lastDecision"]["reason"] == "ScaleUpLeaving" and "leaving nodes" in st["lastDecision"]["message"]
    (entry,) = st["drain"]
    assert entry["node"] == "gpu-1" and entry["leaving"] == "cordoned" and entry["replicas"] == 2
    assert (entry["needed"], entry["readyElsewhere"], entry["safe"]) == (4, 2, False)
    reasons = [e["reason"] for e in kube.items("", "events")]
    assert "NodeLeaving" in reasons and "ReplacementsReady" not in reasons

    for i in (4, 5):  # the replacements come up on gpu-3
        kube.put("", "pods", _pod(f"llama-{i}", "gpu-3"), kind="Pod")
    now[0] += 20
    c.run_once()
    (entry,) = status_of(kube)["drain"]
    assert entry["safe"] is True and entry["replacementsReady"] == 2 and entry["readyElsewhere"] == 4
    assert [e["reason"] for e in kube.items("", "events")].count("ReplacementsReady") == 1

    for i in (0, 1):  # drained: the node's pods are gone
        kube.delete("", "pods", "models", f"llama-{i}")
    now[0] += 20
    c.run_once()
    assert status_of(kube)["drain"] == []
