"""Warm capacity in the controller: the placeholder Deployment, warm slots fed to the decision, and replicas
that took a warm slot observed as warm starts."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from autoscaler.controller.warmpool import IDLE, PRESTAGE, REASSERT_SECONDS, placeholder_pod_spec
from autoscaler.observe import ColdStartObserver
from autoscaler.observe.timefmt import format_time
from autoscaler.observe.warm import WARM_FOR_LABEL, WarmNodes, landed_warm, running_placeholders, warm_label_value
from autoscaler.policy import WarmCapacitySpec
from tests.unit.controller.conftest import (
    GROUP,
    add_gpu_node,
    add_policy,
    condition,
    make_controller,
    pod,
    status_of,
)
from tests.unit.controller.fakeapi import FakeKube

WARM_DEP = r"/apis/apps/v1/namespaces/models/deployments(/llama-warm)?$"
PLACEMENT = {
    "nodeSelector": {"gpu": "true"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu-type", "operator": "In", "values": ["a100"]}]}]}}},
}
ENGINE = {
    "name": "engine", "image": "vllm/vllm-openai:v0.6", "args": ["--model", "llama"],
    "env": [{"name": "HF_TOKEN", "value": "x"}],
    "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "4"}, "limits": {"nvidia.com/gpu": "1"}},
}
SIDECAR = {"name": "proxy", "image": "envoy:1", "resources": {"requests": {"cpu": "100m"}}}


def add_target(kube: FakeKube, replicas: int = 2, image: str = "vllm/vllm-openai:v0.6") -> dict[str, Any]:
    labels = {"app": "llama"}
    dep = kube.put("apps", "deployments", {
        "metadata": {"name": "llama", "namespace": "models"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {**PLACEMENT, "containers": [{**ENGINE, "image": image}, SIDECAR]}}},
        "status": {"replicas": replicas},
    }, kind="Deployment")
    for i in range(replicas):
        kube.put("", "pods", pod(f"llama-{i}", "models", labels), kind="Pod")
    return dep


def warm_policy(kube: FakeKube, **warm: Any) -> dict[str, Any]:
    return add_policy(kube, warmCapacity={"enabled": True, "minSlots": 2, "maxSlots": 3, **warm})


def placeholder(name: str, node: str, *, phase: str = "Running", created_ago: float = 900) -> dict[str, Any]:
    p = pod(name, "models", {WARM_FOR_LABEL: "llama"}, node=node, created_ago=created_ago)
    p["status"]["phase"] = phase
    return p


def test_keeps_a_placeholder_deployment_owned_by_the_policy_with_the_replicas_gpus_and_placement(kube, api, source):
    add_gpu_node(kube)
    add_target(kube)
    pol = warm_policy(kube)
    make_controller(api, source).run_once()
    dep = kube.get("apps", "deployments", "models", "llama-warm")
    assert dep is not None
    assert dep["spec"]["replicas"] == 2  # minSlots (no forecast to size from)
    owner = dep["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("ModelScalingPolicy", "llama", pol["metadata"]["uid"])
    spec = dep["spec"]["template"]["spec"]
    assert {k: spec[k] for k in PLACEMENT} == PLACEMENT
    assert spec["priorityClassName"] == "inference-autoscaler-warm"
    # Only the GPU container, with its resources and image, running a no-op.
    assert [c["name"] for c in spec["containers"]] == ["engine"]
    c = spec["containers"][0]
    assert c["resources"] == ENGINE["resources"] and c["image"] == ENGINE["image"]
    assert c["command"] == ["/bin/sh", "-c"] and c["args"] == [IDLE] and "env" not in c
    # Its pods are never the target's: the target's selector does not match them.
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert "app" not in labels and labels[WARM_FOR_LABEL] == "llama"
    assert dep["spec"]["selector"]["matchLabels"] == {WARM_FOR_LABEL: "llama"}
    st = status_of(kube)
    assert st["warmCapacity"]["desiredSlots"] == 2 and st["warmCapacity"]["runningSlots"] == 0
    assert st["warmCapacity"]["gpusHeld"] == 0  # nothing runs yet: nothing is billed
    assert st["lastDecision"]["components"]["warm_slots"] == 2


def test_writes_only_what_changed(kube, api, source):
    add_gpu_node(kube)
    add_target(kube)
    warm_policy(kube)
    clock = [time.time()]
    ctl = make_controller(api, source, clock=lambda: clock[0])
    ctl.run_once()
    assert len(kube.calls("POST", WARM_DEP)) == 1
    kube.reset_log()
    clock[0] += 20
    ctl.run_once()
    assert not kube.calls("POST", WARM_DEP) and not kube.calls("PATCH", WARM_DEP)
    # The policy asks for another slot: only replicas are patched.
    obj = kube.get(GROUP, "modelscalingpolicies", "models", "llama")
    obj["spec"]["warmCapacity"]["minSlots"] = 3
    kube.put(GROUP, "modelscalingpolicies", {**obj, "metadata": {**obj["metadata"], "generation": 2}})
    clock[0] += 20
    ctl.run_once()
    assert len(kube.calls("PATCH", WARM_DEP)) == 1
    dep = kube.get("apps", "deployments", "models", "llama-warm")
    assert dep["spec"]["replicas"] == 3
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == ENGINE["image"]
    # The target's image changes: the placeholder follows (so the new image is what is cached).
    add_target(kube, image="vllm/vllm-openai:v0.7")
    kube.reset_log()
    clock[0] += 20
    ctl.run_once()
    assert len(kube.calls("PATCH", WARM_DEP)) == 1
    dep = kube.get("apps", "deployments", "models", "llama-warm")
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.7"


def test_a_deleted_placeholder_deployment_comes_back_and_a_new_policy_owns_its_own(kube, api, source):
    add_gpu_node(kube)
    add_target(kube)
    warm_policy(kube)
    clock = [time.time()]
    ctl = make_controller(api, source, clock=lambda: clock[0])
    ctl.run_once()
    kube.delete("apps", "deployments", "models", "llama-warm")  # someone deleted it
    clock[0] += 20
    ctl.run_once()
    assert kube.get("apps", "deployments", "models", "llama-warm") is None  # not re-checked every tick
    clock[0] += REASSERT_SECONDS
    ctl.run_once()
    assert kube.get("apps", "deployments", "models", "llama-warm") is not None
    # The policy is deleted (its Deployment garbage-collected) and created again: a new owner, a new Deployment.
    kube.delete(GROUP, "modelscalingpolicies", "models", "llama")
    kube.delete("apps", "deployments", "models", "llama-warm")
    clock[0] += 20
    ctl.run_once()
    again = warm_policy(kube)
    clock[0] += 20
    ctl.run_once()
    dep = kube.get("apps", "deployments", "models", "llama-warm")
    assert dep is not None and dep["metadata"]["ownerReferences"][0]["uid"] == again["metadata"]["uid"]


def test_an_existing_placeholder_from_before_a_restart_is_patched_not_recreated(kube, api, source):
    add_gpu_node(kube)
    add_target(kube)
    warm_policy(kube)
    make_controller(api, source).run_once()
    kube.reset_log()
    make_controller(api, source).run_once()  # a new controller process: nothing in memory
    assert [c[0] for c in kube.calls(path_regex=WARM_DEP) if c[0] != "GET"] == ["POST", "PATCH"]
    assert kube.get("apps", "deployments", "models", "llama-warm")["spec"]["replicas"] == 2


def test_running_placeholders_are_warm_slots_for_the_decision(kube, api, source):
    add_gpu_node(kube, gpus=2)  # the two replicas fill it: a new replica needs a new node
    add_target(kube)
    warm_policy(kube)
    make_controller(api, source).run_once()
    cold = status_of(kube)["leadTimeSeconds"]
    kube.put("", "pods", placeholder("llama-warm-a", "gpu-1"), kind="Pod")
    kube.put("", "pods", placeholder("llama-warm-b", "gpu-1", phase="Pending"), kind="Pod")
    make_controller(api, source).run_once()
    st = status_of(kube)
    assert st["warmCapacity"]["runningSlots"] == 1  # the pending one holds nothing yet
    assert st["warmCapacity"]["gpusHeld"] == 1 and "holding 1 GPU(s)" in st["warmCapacity"]["message"]
    # Default priors: a warm slot skips node provisioning (100 s, high quantile ~147 s).
    assert st["leadTimeSeconds"] < cold - 100


def test_dry_run_writes_no_placeholder(kube, api, source):
    add_gpu_node(kube)
    add_target(kube)
    warm_policy(kube)
    make_controller(api, source, dry_run=True).run_once()
    assert kube.get("apps", "deployments", "models", "llama-warm") is None
    assert "dry run" in status_of(kube)["warmCapacity"]["message"]


def test_a_placeholder_failure_stays_with_the_policy(kube, api, source):
    add_gpu_node(kube)
    add_target(kube)
    warm_policy(kube)
    kube.fail("POST", WARM_DEP, 403, times=10)
    report = make_controller(api, source).run_once()
    assert report.writes == 1  # the target was still scaled
    assert kube.get("apps", "deployments", "models", "llama-warm") is None
    st = status_of(kube)
    assert "could not keep 2 placeholder(s)" in st["warmCapacity"]["message"]
    assert condition(st, "Ready")["status"] == "True"
    assert "WarmCapacityFailed" in [e["reason"] for e in kube.items("", "events")]


def test_switching_warm_capacity_off_deletes_running_placeholders(kube, api, source):
    add_gpu_node(kube)
    add_target(kube)
    add_policy(kube)  # warm capacity off
    kube.put("apps", "deployments", {"metadata": {"name": "llama-warm", "namespace": "models"},
                                     "spec": {"replicas": 1}}, kind="Deployment")
    kube.put("", "pods", placeholder("llama-warm-a", "gpu-1"), kind="Pod")
    clock = [time.time()]
    ctl = make_controller(api, source, clock=lambda: clock[0])
    ctl.run_once()
    assert kube.get("apps", "deployments", "models", "llama-warm") is None
    assert "deleted" in status_of(kube)["warmCapacity"]["message"]
    kube.delete("", "pods", "models", "llama-warm-a")
    clock[0] += 20
    ctl.run_once()
    assert "warmCapacity" not in status_of(kube)  # nothing left to say


def test_a_target_without_a_pod_template_says_so(kube, api, source):
    add_gpu_node(kube)
    kube.scale_paths[("example.com", "models")] = kube.scale_paths[("apps", "deployments")]
    kube.put("example.com", "models", {"metadata": {"name": "llama", "namespace": "models"},
                                       "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "llama"}}}},
             kind="Model")
    add_policy(kube, api_version="example.com/v1", kind="Model",
               warmCapacity={"enabled": True, "minSlots": 1})
    make_controller(api, source).run_once()
    assert kube.get("apps", "deployments", "models", "llama-warm") is None
    assert "has no pod" in status_of(kube).get("warmCapacity", {}).get("message", "")


def test_other_kinds_copy_gpus_and_placement_from_a_pod_of_the_target(kube, api, source):
    add_gpu_node(kube)
    kube.scale_paths[("example.com", "models")] = kube.scale_paths[("apps", "deployments")]
    kube.put("example.com", "models", {"metadata": {"name": "llama", "namespace": "models"},
                                       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "llama"}}}},
             kind="Model")
    replica = pod("llama-0", "models", {"app": "llama"})
    replica["spec"].update(nodeSelector=PLACEMENT["nodeSelector"], tolerations=PLACEMENT["tolerations"])
    replica["spec"]["containers"].append(SIDECAR)
    kube.put("", "pods", replica, kind="Pod")
    add_policy(kube, api_version="example.com/v1", kind="Model", warmCapacity={"enabled": True, "minSlots": 1})
    make_controller(api, source).run_once()
    dep = kube.get("apps", "deployments", "models", "llama-warm")
    assert dep is not None and dep["spec"]["replicas"] == 1
    spec = dep["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == PLACEMENT["nodeSelector"] and spec["tolerations"] == PLACEMENT["tolerations"]
    assert [(c["name"], c["resources"]) for c in spec["containers"]] == [
        ("engine", {"requests": {"nvidia.com/gpu": "1"}})]


# -- the placeholder's pod -----------------------------------------------------------------------------


def test_pre_staging_weights_mounts_the_cache_path_and_downloads_there_first() -> None:
    warm = WarmCapacitySpec.model_validate({"enabled": True, "weightsCachePath": "/var/cache/models",
                                            "image": "my/prestager:1"})
    spec = placeholder_pod_spec({"containers": [ENGINE]}, warm, "meta-llama/Llama-3-8B")
    c = spec["containers"][0]
    assert c["image"] == "my/prestager:1"
    assert c["args"] == [PRESTAGE + IDLE]
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env == {"HF_TOKEN": "x", "HF_HOME": "/var/cache/models", "WARM_MODEL": "meta-llama/Llama-3-8B"}
    assert c["volumeMounts"] == [{"name": "warm-weights", "mountPath": "/var/cache/models"}]
    assert spec["volumes"][0]["hostPath"] == {"path": "/var/cache/models", "type": "DirectoryOrCreate"}


# -- which replicas took a warm slot ------------------------------------------------------------------

T0 = 1_700_000_000.0


def _replica(node: str, created: float, scheduled: float, ready: float) -> dict[str, Any]:
    return {
        "metadata": {"uid": "r1", "name": "llama-x", "namespace": "models", "labels": {"app": "llama"},
                     "creationTimestamp": format_time(T0 + created)},
        "spec": {"nodeName": node, "containers": [{"name": "engine"}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": format_time(T0 + scheduled)},
            {"type": "Ready", "status": "True", "lastTransitionTime": format_time(T0 + ready)}],
            "containerStatuses": [
                {"name": "engine", "state": {"running": {"startedAt": format_time(T0 + scheduled + 1)}}}]},
    }


def test_a_replica_that_preempted_a_placeholder_reports_warm_stages_and_no_node_provisioning() -> None:
    nodes = WarmNodes()
    ph = placeholder("llama-warm-a", "gpu-7")
    nodes.see([ph], T0 - 30)
    nodes.see([ph], T0 - 15)  # the last sighting before the burst; then the scheduler preempted it
    nodes.see([], T0 + 15)
    presence = nodes.nodes("models", "llama")
    replica = _replica("gpu-7", created=0, scheduled=4, ready=40)
    # The scheduler said Unschedulable (preemption pending) and FailedScheduling first: without the warm slot
    # this would read as node provisioning.
    events: dict[str, list[Mapping[str, Any]]] = {
        "r1": [{"reason": "FailedScheduling", "involvedObject": {"uid": "r1"}}]}
    obs = ColdStartObserver()
    out = obs.observe("models/llama", [replica], events, {"gpu-7": T0 - 86400}, presence, 30.0)
    assert {(o.stage, o.situation) for o in out} == {("scheduling", "warm"), ("warmup", "warm")}
    assert next(o.seconds for o in out if o.stage == "scheduling") == 4.0
    # The same replica on another node, or on this node long after the placeholder left: a cold start.
    assert not landed_warm(_replica("gpu-8", 0, 4, 40), presence, 30.0)
    assert not landed_warm(_replica("gpu-7", 600, 604, 640), presence, 30.0)
    # A replica scheduled before any placeholder was seen there did not take a warm slot.
    assert not landed_warm(_replica("gpu-7", -100, -90, -40), presence, 30.0)
    # Without the warm slot it is a default start; on a node older than the pod, scheduling either way.
    cold = ColdStartObserver().observe("models/llama", [replica], events, {"gpu-7": T0 - 86400})
    assert {(o.stage, o.situation) for o in cold} == {("scheduling", "default"), ("warmup", "default")}
    # With no node list the FailedScheduling event alone would read as node provisioning; the slot still wins.
    blind = ColdStartObserver().observe("models/llama", [replica], events, {}, presence, 30.0)
    assert {(o.stage, o.situation) for o in blind} == {("scheduling", "warm"), ("warmup", "warm")}
    assert ("node_provisioning", "default") in {
        (o.stage, o.situation) for o in ColdStartObserver().observe("models/llama", [replica], events, {})}


def test_running_placeholders_count_bound_running_and_not_deleted() -> None:
    deleting = placeholder("c", "gpu-1")
    deleting["metadata"]["deletionTimestamp"] = format_time(T0)
    unbound = placeholder("d", "")
    other_ns = {**placeholder("e", "gpu-1"), "metadata": {**placeholder("e", "gpu-1")["metadata"], "namespace": "x"}}
    pods = [placeholder("a", "gpu-1"), placeholder("b", "gpu-2", phase="Pending"), deleting, unbound, other_ns,
            pod("llama-0", "models", {"app": "llama"})]
    assert running_placeholders(pods) == {("models", "llama"): 1, ("x", "llama"): 1}
    long = "p" * 80
    assert len(warm_label_value(long)) <= 63 and warm_label_value(long) != warm_label_value(long[:-1] + "q")


def test_the_status_says_what_the_running_placeholders_hold() -> None:
    from autoscaler.controller.warmpool import WarmStatus

    assert WarmStatus(3, 2, "m", gpus_per_slot=4).to_dict() == {
        "desiredSlots": 3, "runningSlots": 2, "message": "m", "gpusHeld": 8}
    assert "gpusHeld" not in WarmStatus(3, 2, "could not keep them").to_dict()  # a failure: GPUs unknown
