"""Two writers of one replica count fight. The first policy owns a target; a later policy, an HPA or a
KEDA ScaledObject on the same target makes a policy report `Conflict` and never write it."""

from __future__ import annotations

import time
from typing import Any

from tests.unit.controller.conftest import (
    GROUP,
    CountingSource,
    add_deployment,
    add_gpu_node,
    condition,
    make_controller,
    policy,
    status_of,
)
from tests.unit.controller.fakeapi import FakeKube

SCALE = r"/deployments/llama/scale$"


def _put_policy(kube: FakeKube, name: str, created: str, **spec: Any) -> None:
    body = policy(name=name, target="llama", **spec)
    body["metadata"]["creationTimestamp"] = created
    kube.put(GROUP, "modelscalingpolicies", body, kind="ModelScalingPolicy")


def _replicas(kube: FakeKube) -> int:
    obj = kube.get("apps", "deployments", "models", "llama")
    assert obj is not None
    return int(obj["spec"]["replicas"])


def _hpa(kube: FakeKube, target: str = "llama") -> None:
    kube.put(
        "autoscaling",
        "horizontalpodautoscalers",
        {
            "metadata": {"name": "llama-hpa", "namespace": "models"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                "minReplicas": 1,
                "maxReplicas": 3,
            },
        },
        kind="HorizontalPodAutoscaler",
    )


def test_two_policies_on_one_deployment_the_older_owns_it_and_replicas_never_flap(kube, api):
    add_gpu_node(kube)
    add_deployment(kube, replicas=1)
    # "b" is older (owner); "a" plans with 10x the capacity per replica, so it would want far fewer.
    _put_policy(kube, "b", "2026-01-01T00:00:00Z")
    _put_policy(kube, "a", "2026-01-02T00:00:00Z", capacity={"generationTokensPerSecond": 25000})
    source = CountingSource(prompt_tps=30000, gen_tps=20000)
    now = [time.time()]
    c = make_controller(api, source, clock=lambda: now[0])
    seen = []
    for _ in range(12):
        c.run_once()
        seen.append(_replicas(kube))
        now[0] += 15
    assert seen == sorted(seen), f"replicas flapped: {seen}"
    owner, other = status_of(kube, "b"), status_of(kube, "a")
    assert seen[-1] == owner["desiredReplicas"] > 1
    assert other["desiredReplicas"] < owner["desiredReplicas"], "the second policy really wanted another count"
    conflict = condition(other, "Conflict")
    assert conflict["status"] == "True" and "policy models/b already owns this target" in conflict["message"]
    assert condition(other, "ScalingActive")["reason"] == "Conflict"
    assert condition(other, "Ready")["status"] == "False"
    assert other["lastDecision"]["applied"] is False
    assert condition(owner, "Ready")["status"] == "True"
    events = [e for e in kube.items("", "events") if e["involvedObject"]["name"] == "a"]
    assert events and all(e["reason"] == "Conflict" for e in events)
    assert "models/b" in events[0]["message"]


def test_an_hpa_on_the_target_means_conflict_and_no_writes_until_it_is_gone(kube, api, source):
    add_gpu_node(kube)
    add_deployment(kube, replicas=1)
    _put_policy(kube, "llama", "2026-01-01T00:00:00Z")
    _hpa(kube)
    now = [time.time()]
    c = make_controller(api, source, clock=lambda: now[0])
    c.run_once()
    assert not kube.calls("PUT", SCALE), "nothing written while an HPA scales the target"
    st = status_of(kube, "llama")
    conflict = condition(st, "Conflict")
    assert conflict["status"] == "True"
    assert "HorizontalPodAutoscaler models/llama-hpa" in conflict["message"]
    ev = [e for e in kube.items("", "events") if e["reason"] == "Conflict"]
    assert ev and "HorizontalPodAutoscaler models/llama-hpa" in ev[0]["message"]
    assert _replicas(kube) == 1

    kube.delete("autoscaling", "horizontalpodautoscalers", "models", "llama-hpa")
    now[0] += 15
    c.run_once()
    assert kube.calls("PUT", SCALE)
    st = status_of(kube, "llama")
    assert condition(st, "Conflict")["status"] == "False"
    assert _replicas(kube) == st["desiredReplicas"] > 1


def test_an_hpa_on_another_deployment_is_no_conflict(kube, api, source):
    add_deployment(kube, replicas=1)
    _put_policy(kube, "llama", "2026-01-01T00:00:00Z")
    _hpa(kube, target="something-else")
    make_controller(api, source).run_once()
    assert kube.calls("PUT", SCALE)
    assert not any(c["type"] == "Conflict" for c in status_of(kube, "llama")["conditions"])


def test_a_keda_scaled_object_on_the_target_means_conflict(kube, api, source):
    add_deployment(kube, replicas=1)
    _put_policy(kube, "llama", "2026-01-01T00:00:00Z")
    kube.put(
        "keda.sh",
        "scaledobjects",
        {"metadata": {"name": "llama-so", "namespace": "models"}, "spec": {"scaleTargetRef": {"name": "llama"}}},
        kind="ScaledObject",
    )
    make_controller(api, source).run_once()
    assert not kube.calls("PUT", SCALE)
    assert "ScaledObject models/llama-so" in condition(status_of(kube, "llama"), "Conflict")["message"]


def test_without_keda_or_hpa_read_access_the_controller_still_runs(kube, api, source):
    add_deployment(kube, replicas=1)
    _put_policy(kube, "llama", "2026-01-01T00:00:00Z")
    kube.fail("GET", r"/scaledobjects$", 404, times=1)
    kube.fail("GET", r"/horizontalpodautoscalers$", 403, times=1)
    c = make_controller(api, source)
    report = c.run_once()
    assert report.writes == 1
    assert c.readyz()[0]
    assert all(not i.available for i in c.autoscalers)
