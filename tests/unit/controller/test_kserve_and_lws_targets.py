"""KServe InferenceService / LLMInferenceService and LeaderWorkerSet targets."""

from __future__ import annotations

from kubernetes import client

from autoscaler.targets.kserve import InferenceServiceTarget
from tests.unit.controller.conftest import add_deployment, add_policy, condition, make_controller, pod, status_of
from tests.unit.controller.fakeapi import FakeKube

KSERVE = "serving.kserve.io"


def isvc(kube: FakeKube, annotations: dict[str, str], predictor: dict | None = None) -> None:
    kube.put(
        KSERVE,
        "inferenceservices",
        {
            "metadata": {"name": "qwen", "namespace": "models", "annotations": annotations},
            "spec": {"predictor": predictor or {"minReplicas": 1, "maxReplicas": 2}},
        },
        kind="InferenceService",
    )
    add_deployment(kube, name="qwen-predictor", replicas=1)


def isvc_policy(kube: FakeKube) -> None:
    add_policy(kube, name="qwen", kind="InferenceService", api_version="serving.kserve.io/v1beta1", target="qwen")


def writes(kube: FakeKube) -> list[tuple[str, str, str]]:
    return [
        c
        for c in kube.calls()
        if c[0] in ("PUT", "PATCH") and "modelscalingpolicies" not in c[1] and "/events" not in c[1]
    ]


def test_external_autoscaler_class_scales_the_predictor_deployment(kube, api, source):
    isvc(kube, {"serving.kserve.io/deploymentMode": "RawDeployment", "serving.kserve.io/autoscalerClass": "external"})
    isvc_policy(kube)
    make_controller(api, source).run_once()
    desired = status_of(kube, "qwen")["desiredReplicas"]
    assert desired > 1
    assert kube.get("apps", "deployments", "models", "qwen-predictor")["spec"]["replicas"] == desired
    assert [c[1] for c in writes(kube)] == ["/apis/apps/v1/namespaces/models/deployments/qwen-predictor/scale"]


def test_none_autoscaler_class_patches_min_replicas_and_raises_max_replicas(kube, api, source):
    isvc(kube, {"serving.kserve.io/deploymentMode": "Standard", "serving.kserve.io/autoscalerClass": "none"})
    isvc_policy(kube)
    make_controller(api, source).run_once()
    desired = status_of(kube, "qwen")["desiredReplicas"]
    pred = kube.get(KSERVE, "inferenceservices", "models", "qwen")["spec"]["predictor"]
    assert pred["minReplicas"] == desired and pred["maxReplicas"] == desired
    assert [c[1] for c in writes(kube)] == ["/apis/serving.kserve.io/v1beta1/namespaces/models/inferenceservices/qwen"]
    assert kube.get("apps", "deployments", "models", "qwen-predictor")["spec"]["replicas"] == 1


def test_an_inference_service_goes_to_zero_and_back_through_either_class(kube, api):
    """scaleFromZero on an InferenceService: KServe accepts `minReplicas: 0` (its validateReplicas refuses only
    negatives) and, for class none, sets the Deployment's replicas from it; for external it keeps what /scale
    says. Either way 0 and the wake are plain writes of the same target."""
    for klass in ("none", "external"):
        isvc(kube, {"serving.kserve.io/deploymentMode": "Standard", "serving.kserve.io/autoscalerClass": klass})
        target = InferenceServiceTarget(client.CustomObjectsApi(api), client.AppsV1Api(api), "models", "qwen")
        for replicas in (0, 2):
            target.write(replicas, target.read(fresh=True))
            pred = kube.get(KSERVE, "inferenceservices", "models", "qwen")["spec"]["predictor"]
            deployment = kube.get("apps", "deployments", "models", "qwen-predictor")["spec"]["replicas"]
            assert (pred["minReplicas"] if klass == "none" else deployment) == replicas, (klass, replicas)
            assert target.read(fresh=True).blocked is None


def test_hpa_autoscaler_class_is_not_fought_and_the_condition_says_what_to_change(kube, api, source):
    isvc(kube, {"serving.kserve.io/deploymentMode": "RawDeployment"})  # class defaults to hpa
    isvc_policy(kube)
    make_controller(api, source).run_once()
    assert writes(kube) == []
    st = status_of(kube, "qwen")
    sa = condition(st, "ScalingActive")
    assert sa["status"] == "False" and sa["reason"] == "OtherAutoscalerOwnsReplicas"
    assert "serving.kserve.io/autoscalerClass: external" in sa["message"]
    assert st["desiredReplicas"] > 1 and st["lastDecision"]["applied"] is False  # what it would do, recorded


def test_keda_class_and_knative_mode_are_not_written(kube, api, source):
    isvc(kube, {"serving.kserve.io/deploymentMode": "Serverless"})
    isvc_policy(kube)
    make_controller(api, source).run_once()
    assert writes(kube) == []
    assert condition(status_of(kube, "qwen"), "ScalingActive")["reason"] == "UnsupportedDeploymentMode"


def test_a_missing_predictor_deployment_is_target_not_found(kube, api, source):
    kube.put(
        KSERVE,
        "inferenceservices",
        {"metadata": {"name": "qwen", "namespace": "models"}, "spec": {"predictor": {}}},
        kind="InferenceService",
    )
    isvc_policy(kube)
    make_controller(api, source).run_once()
    tf = condition(status_of(kube, "qwen"), "TargetFound")
    assert tf["status"] == "False" and "qwen-predictor" in tf["message"]


def llmisvc(kube: FakeKube, spec: dict) -> None:
    kube.put(
        KSERVE,
        "llminferenceservices",
        {"metadata": {"name": "big", "namespace": "models"}, "spec": spec},
        kind="LLMInferenceService",
    )
    add_policy(kube, name="big", kind="LLMInferenceService", api_version="serving.kserve.io/v1alpha1", target="big")


def test_llm_inference_service_scales_its_kserve_deployment(kube, api, source):
    llmisvc(kube, {"model": {"uri": "hf://x"}})
    add_deployment(kube, name="big-kserve", replicas=1)
    make_controller(api, source).run_once()
    assert (
        kube.get("apps", "deployments", "models", "big-kserve")["spec"]["replicas"]
        == status_of(kube, "big")["desiredReplicas"]
        > 1
    )


def add_lws(kube: FakeKube, name: str, replicas: int = 1) -> None:
    kube.put(
        "leaderworkerset.x-k8s.io",
        "leaderworkersets",
        {
            "metadata": {"name": name, "namespace": "models"},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": 2}},
            "status": {"replicas": replicas, "hpaPodSelector": f"leaderworkerset.sigs.k8s.io/name={name},role=leader"},
        },
        kind="LeaderWorkerSet",
    )
    kube.put(
        "", "pods", pod(f"{name}-0", "models", {"leaderworkerset.sigs.k8s.io/name": name, "role": "leader"}), kind="Pod"
    )
    kube.put(
        "",
        "pods",
        pod(f"{name}-0-1", "models", {"leaderworkerset.sigs.k8s.io/name": name, "role": "worker"}),
        kind="Pod",
    )


def test_multi_node_llm_inference_service_scales_its_leader_worker_set(kube, api, source):
    llmisvc(kube, {"worker": {"containers": []}})
    add_lws(kube, "big-kserve-mn")
    make_controller(api, source).run_once()
    lws = kube.get("leaderworkerset.x-k8s.io", "leaderworkersets", "models", "big-kserve-mn")
    st = status_of(kube, "big")
    assert lws["spec"]["replicas"] == st["desiredReplicas"] > 1
    assert st["readyReplicas"] == 1  # groups are counted by their leader pods only


def test_llm_inference_service_with_static_replicas_is_not_written(kube, api, source):
    llmisvc(kube, {"replicas": 2})
    add_deployment(kube, name="big-kserve", replicas=2)
    make_controller(api, source).run_once()
    assert kube.get("apps", "deployments", "models", "big-kserve")["spec"]["replicas"] == 2
    sa = condition(status_of(kube, "big"), "ScalingActive")
    assert sa["reason"] == "StaticReplicas" and "remove spec.replicas" in sa["message"]


def test_leader_worker_set_is_scaled_through_its_scale_subresource_with_a_precondition(kube, api, source):
    add_lws(kube, "llama-70b")
    add_policy(
        kube, name="llama-70b", kind="LeaderWorkerSet", api_version="leaderworkerset.x-k8s.io/v1", target="llama-70b"
    )
    kube.fail("PATCH", r"leaderworkersets/llama-70b/scale$", 409, times=1)
    make_controller(api, source).run_once()
    lws = kube.get("leaderworkerset.x-k8s.io", "leaderworkersets", "models", "llama-70b")
    assert lws["spec"]["replicas"] == status_of(kube, "llama-70b")["desiredReplicas"] > 1
    assert len(kube.calls("PATCH", r"leaderworkersets/llama-70b/scale$")) == 2


def test_an_unknown_kind_with_a_scale_subresource_is_found_through_discovery(kube, api, source):
    from tests.unit.controller.fakeapi import ScalePaths

    kube.scale_paths[("example.com", "inferencepools")] = ScalePaths(selector="status.selector")
    kube.put(
        "example.com",
        "inferencepools",
        {
            "metadata": {"name": "pool", "namespace": "models"},
            "spec": {"replicas": 1},
            "status": {"replicas": 1, "selector": "a=b"},
        },
        kind="InferencePool",
    )
    add_policy(kube, name="pool", kind="InferencePool", api_version="example.com/v1", target="pool")
    make_controller(api, source).run_once()
    assert kube.get("example.com", "inferencepools", "models", "pool")["spec"]["replicas"] > 1
    assert kube.calls("GET", r"^/apis/example.com/v1$")


def test_cached_targets_read_a_scale_once_per_version_and_kserve_objects_from_the_watch(kube, api, source):
    """A `/scale` target other than a Deployment is watched through its own resource: its Scale is read once
    per resourceVersion of the object. InferenceServices come from their watch cache. Unchanged: no GET."""
    import time

    add_lws(kube, "llama-70b")
    add_policy(
        kube, name="llama-70b", kind="LeaderWorkerSet", api_version="leaderworkerset.x-k8s.io/v1", target="llama-70b"
    )
    isvc(kube, {"serving.kserve.io/deploymentMode": "Standard", "serving.kserve.io/autoscalerClass": "external"})
    isvc_policy(kube)
    now = time.time()
    c = make_controller(api, source, clock=lambda: now)
    c.sync()
    c.reconciler.tick(now)
    for k in range(1, 4):  # let both settle at what the load needs
        c.sync()
        c.reconciler.tick(now + 15 * k)
    c.sync()
    kube.reset_log()
    c.reconciler.tick(now + 60)
    gets = [p for m, p, q in kube.calls("GET") if "watch" not in q]
    assert not [p for p in gets if p.endswith("/scale") or "/inferenceservices/" in p], gets
    lws = kube.get("leaderworkerset.x-k8s.io", "leaderworkersets", "models", "llama-70b")
    kube.put("leaderworkerset.x-k8s.io", "leaderworkersets", {**lws, "spec": {**lws["spec"], "replicas": 9}})
    c.sync()
    kube.reset_log()
    c.reconciler.tick(now + 75)
    assert len(kube.calls("GET", r"leaderworkersets/llama-70b/scale$")) == 1  # a new version: read once
    status = c.reconciler.runtimes["models/llama-70b"].status
    assert status is not None and status["currentReplicas"] == 9
