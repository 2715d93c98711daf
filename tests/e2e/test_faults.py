"""Faults on a real control plane: Prometheus dies, the leader dies, the API server restarts, RBAC says no,
a policy is invalid, and the KServe modes. Each test runs the controller as a local process with the
chart's arguments and ServiceAccount token (see tests/e2e/drill), in its own watched namespace.

Needs .ci/build-kube.sh, .ci/install-helm.sh and .ci/install-prometheus.sh; fails (never skips) without.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from kubernetes import client

from .drill.history import condition, controller_events, wait_for
from .drill.identity import api_client_for
from .drill.load import steady_trace
from .drill.manifests import (
    KSERVE_GROUP,
    KSERVE_VERSION,
    POLICY_GROUP,
    POLICY_PLURAL,
    POLICY_VERSION,
    deployment_ref,
    inference_service,
    kserve_crd,
    model_deployment,
    policy,
)
from .drill.release import LEASE_SECONDS, RELEASE_NAMESPACE, RETRY_SECONDS, UNWATCHED
from .drill.tools import api_result, free_port
from .drill.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
INTERVAL = 2.0


def report(*lines: str) -> None:
    print("\n" + "\n".join(lines), file=sys.stderr)


def dead_prometheus_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens: every query is refused at once


def lease(ws: Workspace, name: str) -> Any:
    return client.CoordinationV1Api(ws.cluster.api_client()).read_namespaced_lease(name, RELEASE_NAMESPACE)


# --------------------------------------------------------------------------------------------------
def test_prometheus_killed_mid_drill_holds_then_recovers(workspace: Callable[[str], Workspace]) -> None:
    """Stale metrics never scale down: MetricsAvailable=False says why; scale-down resumes once it is back."""
    ws = workspace("prometheus")
    window = 16.0
    ws.add_gpu_nodes(1, gpus=8)
    ws.create_deployment(model_deployment("chat", 4, pool=ws.namespace, ready_delay=2.0))
    ws.wait_ready("chat", 4, timeout=30)
    emu = ws.emulator(steady_trace(rps=3.0, duration_s=600), "chat", MODEL)  # ~0.45 replicas of work
    emu.start()
    prom = ws.prometheus(emu)
    prom.wait_for("vllm:num_requests_waiting", n=4)
    ws.create_policy(policy("chat", deployment_ref("chat"), MODEL, {
        "intervalSeconds": INTERVAL,
        "metrics": {"stalenessSeconds": 2 * INTERVAL},
        "replicas": {"min": 1, "max": 6},
        "scaleDown": {"stabilizationWindowSeconds": window, "periodSeconds": 2, "maxStepReplicas": 4},
    }))
    hist = ws.deployment_history("chat")
    status_hist = ws.policy_history("chat")
    ctl = ws.controller("prom", prometheus_url=prom.url)

    # Fresh metrics and less demand than replicas: the controller wants fewer, and waits out the window.
    wait_for(lambda: (condition(ws.policy_status("chat"), "MetricsAvailable") or {}).get("status") == "True",
             20, "MetricsAvailable=True")
    assert ws.replicas("chat") == 4
    prom.kill()
    killed_at = time.time()

    st = wait_for(lambda: (s := ws.policy_status("chat")) and
                  (condition(s, "MetricsAvailable") or {}).get("status") == "False" and s, 20,
                  "MetricsAvailable=False")
    stale_after = time.time() - killed_at
    metrics_cond = condition(st, "MetricsAvailable")
    assert metrics_cond is not None
    # Hold well past the stabilization window: nothing is written while demand is unknown.
    time.sleep(window + 3 * INTERVAL)
    held = ws.policy_status("chat")
    assert ws.replicas("chat") == 4, hist.spec_changes()
    assert [c.replicas for c in hist.spec_changes()] == [4]
    assert held["lastDecision"]["reason"] == "MetricsMissing", held["lastDecision"]
    assert held["desiredReplicas"] == 4

    prom.start()  # same port, same TSDB
    restarted_at = time.time()
    wait_for(lambda: (condition(ws.policy_status("chat"), "MetricsAvailable") or {}).get("status") == "True",
             30, "MetricsAvailable=True again")
    fresh_after = time.time() - restarted_at
    down = wait_for(lambda: next((c for c in hist.spec_changes() if c.replicas < 4), None), window + 30,
                    "scale-down after recovery")
    ctl.stop()
    report("==== prometheus fault ====",
           f"stale {stale_after:.1f}s after the kill; condition {metrics_cond}",
           f"fresh {fresh_after:.1f}s after restart; scale-down {down.replicas} {down.at - restarted_at:.1f}s after",
           f"reasons {status_hist.reasons()}")
    assert metrics_cond["reason"] == "MetricsMissing", metrics_cond
    assert "stale" in metrics_cond["message"] or "missing" in metrics_cond["message"], metrics_cond
    assert stale_after <= 2 * INTERVAL + 2 * INTERVAL + 2, stale_after  # staleness + one tick
    assert down.at > restarted_at
    assert down.replicas < 4


# --------------------------------------------------------------------------------------------------
def test_leader_handover_after_sigkill(workspace: Callable[[str], Workspace]) -> None:
    """Two controllers: only the Lease holder writes; SIGKILL it and the other takes over within the lease."""
    ws = workspace("leader")
    ws.add_gpu_nodes(1, gpus=8)
    ws.create_deployment(model_deployment("chat", 1, pool=ws.namespace, ready_delay=1.0))
    ws.create_policy(policy("chat", deployment_ref("chat"), MODEL, {
        "intervalSeconds": INTERVAL, "replicas": {"min": 1, "max": 6}}))
    hist = ws.deployment_history("chat")
    url = dead_prometheus_url()  # demand unknown: only the floor moves replicas, and only up
    a = ws.controller("a", prometheus_url=url, lease="handover")
    wait_for(lambda: a.readyz()[1] == "ok: leading", 15, "a leading")
    b = ws.controller("b", prometheus_url=url, lease="handover")
    assert b.readyz() == (200, "ok: standing by")
    assert lease(ws, "handover").spec.holder_identity == a.identity

    ws.patch_policy("chat", {"spec": {"replicas": {"min": 2}}})
    wait_for(lambda: ws.replicas("chat") == 2, 15, "leader a scales to 2")
    time.sleep(2 * INTERVAL)
    assert b.metric("inference_autoscaler_scale_writes_total") == 0
    assert a.metric("inference_autoscaler_scale_writes_total") == 1

    a.kill()
    killed_at = time.time()
    wait_for(lambda: lease(ws, "handover").spec.holder_identity == b.identity, LEASE_SECONDS + 10,
             "b holds the lease")
    handover_s = time.time() - killed_at
    wait_for(lambda: b.readyz()[1] == "ok: leading", 5, "b leading")
    ws.patch_policy("chat", {"spec": {"replicas": {"min": 3}}})
    wait_for(lambda: ws.replicas("chat") == 3, 15, "new leader b scales to 3")
    time.sleep(INTERVAL)

    writes = [(e.reason, e.reporting_instance, e.message) for e in controller_events(ws.core, ws.namespace, "chat")
              if e.reason in ("ScaledUp", "ScaledDown")]
    the_lease = lease(ws, "handover").spec
    report("==== leader hand-over ====", f"a={a.identity} b={b.identity}",
           f"hand-over {handover_s:.1f}s after SIGKILL (lease {LEASE_SECONDS}s, retry {RETRY_SECONDS}s)",
           f"writes {writes}", f"lease transitions {the_lease.lease_transitions}",
           f"spec.replicas {[c.replicas for c in hist.spec_changes()]}")
    assert handover_s <= LEASE_SECONDS + 2 * RETRY_SECONDS + 1.5, handover_s
    assert [c.replicas for c in hist.spec_changes()] == [1, 2, 3]  # one write each, no duplicates
    assert [(r, who) for r, who, _ in writes] == [("ScaledUp", a.identity), ("ScaledUp", b.identity)]
    assert b.metric("inference_autoscaler_scale_writes_total") == 1
    assert b.metric("inference_autoscaler_leader") == 1
    assert the_lease.lease_transitions >= 1


# --------------------------------------------------------------------------------------------------
def test_apiserver_restart_mid_drill(workspace: Callable[[str], Workspace]) -> None:
    """The API server is killed and restarted while a scale-up is due: the controller reconnects and every
    decided change is written exactly once (counted by the Deployment's generation)."""
    ws = workspace("apiserver")
    ws.add_gpu_nodes(1, gpus=8)
    ws.create_deployment(model_deployment("chat", 2, pool=ws.namespace, ready_delay=2.0))
    ws.wait_ready("chat", 2, timeout=30)
    emu = ws.emulator(steady_trace(rps=3.0, duration_s=600), "chat", MODEL)
    emu.start()
    prom = ws.prometheus(emu)
    prom.wait_for("vllm:num_requests_waiting", n=2)
    ws.create_policy(policy("chat", deployment_ref("chat"), MODEL, {
        "intervalSeconds": INTERVAL, "metrics": {"stalenessSeconds": 3 * INTERVAL},
        "replicas": {"min": 2, "max": 8}, "scaleDown": {"stabilizationWindowSeconds": 600}}))
    gen0 = int(ws.apps.read_namespaced_deployment("chat", ws.namespace).metadata.generation)
    hist = ws.deployment_history("chat")
    ctl = ws.controller("restart", prometheus_url=prom.url)
    wait_for(lambda: (ws.policy_status("chat").get("lastDecision") or {}).get("reason") == "Steady", 20, "steady")

    ws.patch_policy("chat", {"spec": {"replicas": {"min": 3}}})
    wait_for(lambda: ws.replicas("chat") == 3, 10, "scale to 3")
    # Its event is recorded after the write, and an event that meets the outage is dropped by design (a
    # courtesy, autoscaler/controller/events.py): the kill waits for it, so only the next write meets it.
    wait_for(lambda: any(e.reason == "ScaledUp" and "-> 3" in (e.message or "")
                         for e in controller_events(ws.core, ws.namespace, "chat")), 20, "the scale-to-3 event")
    # A change decided just before the API server dies: its write meets the outage and must land once.
    ws.patch_policy("chat", {"spec": {"replicas": {"min": 4}}})
    t_kill = time.time()
    ws.cluster.restart_apiserver(downtime=5.0)  # longer than the renew deadline: leadership lapses too
    back_s = time.time() - t_kill
    before_outage = any(c.replicas == 4 and c.at < t_kill for c in hist.spec_changes())
    wait_for(lambda: ws.replicas("chat") == 4, 60, "the write that met the outage lands")
    landed_s = time.time() - t_kill - back_s
    # The controller reconnected: it sees a spec changed after the restart and acts on it.
    ws.patch_policy("chat", {"spec": {"replicas": {"min": 5}}})
    wait_for(lambda: ws.replicas("chat") == 5, 30, "a change made after the restart")
    time.sleep(3 * INTERVAL)  # room for any duplicate write to show up

    gen = int(ws.apps.read_namespaced_deployment("chat", ws.namespace).metadata.generation)
    writes = ctl.metric("inference_autoscaler_scale_writes_total")
    api_errors = ctl.metric("inference_autoscaler_kube_api_errors_total")
    status = ws.policy_status("chat")
    events = [(e.reason, e.count, e.message) for e in controller_events(ws.core, ws.namespace, "chat")]
    series = [c.replicas for c in hist.spec_changes()]
    ctl.stop()
    report("==== API server restart ====", f"API server back after {back_s:.1f}s; the write to 4 landed "
           + ("before the outage" if before_outage else f"{landed_s:.1f}s after it"),
           f"spec.replicas {series}; generation {gen0} -> {gen}; controller writes {writes}; "
           f"API errors {api_errors}", f"events {events}")
    assert ctl.returncode == 0, ctl.log_tail()
    assert series == [2, 3, 4, 5], series  # nothing lost, nothing written twice
    assert gen - gen0 == 3 == writes, (gen0, gen, writes)
    assert status["desiredReplicas"] == status["currentReplicas"] == 5
    assert (condition(status, "Ready") or {}).get("status") == "True", status.get("conditions")
    scaled = [m for r, _, m in events if r == "ScaledUp"]
    assert len(scaled) == 3 and all(f"-> {n}" in m for n, m in zip((3, 4, 5), scaled, strict=True)), scaled


# --------------------------------------------------------------------------------------------------
def test_rbac_limits_the_controller_identity(workspace: Callable[[str], Workspace]) -> None:
    """The chart's ServiceAccount, checked by the real API server: no secrets, no writes outside the watched
    namespaces, no spec writes; and a policy cannot point at another namespace."""
    ws = workspace("rbac")
    release = ws.release
    sa = api_client_for(release.kubeconfig)
    core_sa, apps_sa, custom_sa = client.CoreV1Api(sa), client.AppsV1Api(sa), client.CustomObjectsApi(sa)
    ws.core.create_namespaced_secret(ws.namespace, {"metadata": {"name": "hf-token"}, "stringData": {"t": "x"}})
    ws.apps.create_namespaced_deployment(UNWATCHED, model_deployment("victim", 0, pool="none", ready_delay=1))
    ws.defer(lambda: ws.apps.delete_namespaced_deployment("victim", UNWATCHED))
    ws.create_deployment(model_deployment("chat", 0, pool="none", ready_delay=1))

    denied = {
        "read secret": api_result(lambda: core_sa.read_namespaced_secret("hf-token", ws.namespace)),
        "list secrets": api_result(lambda: core_sa.list_namespaced_secret(ws.namespace)),
        "scale in unwatched ns": api_result(lambda: apps_sa.patch_namespaced_deployment_scale(
            "victim", UNWATCHED, {"spec": {"replicas": 3}})),
        "patch deployment spec": api_result(lambda: apps_sa.patch_namespaced_deployment(
            "chat", ws.namespace, {"spec": {"template": {"spec": {"containers": [
                {"name": "vllm", "image": "evil:latest"}]}}}})),
        "policies in unwatched ns": api_result(lambda: custom_sa.list_namespaced_custom_object(
            POLICY_GROUP, POLICY_VERSION, UNWATCHED, POLICY_PLURAL)),
    }
    allowed = {
        "scale in watched ns": api_result(lambda: apps_sa.patch_namespaced_deployment_scale(
            "chat", ws.namespace, {"spec": {"replicas": 0}})),
        "list pods everywhere": api_result(lambda: core_sa.list_pod_for_all_namespaces(limit=1)),
    }
    sa_user = f"system:serviceaccount:{RELEASE_NAMESPACE}:{release.service_account}"

    # targetRef has no namespace: the API server refuses the field (strict) or drops it (default).
    bad = policy("cross-ns", {**deployment_ref("victim"), "namespace": UNWATCHED}, MODEL,
                 {"replicas": {"min": 3, "max": 4}})
    strict = api_result(lambda: ws.custom.create_namespaced_custom_object(
        POLICY_GROUP, POLICY_VERSION, ws.namespace, POLICY_PLURAL, bad, field_validation="Strict"))
    stored = ws.custom.create_namespaced_custom_object(POLICY_GROUP, POLICY_VERSION, ws.namespace, POLICY_PLURAL,
                                                       bad)
    # The controller looks the target up in the policy's own namespace only.
    once = ws.controller("rbac-once", "--once", start=False, prometheus_url=dead_prometheus_url())
    once.start(wait_ready=False)
    assert once.proc is not None
    once.proc.wait(60)
    st = ws.policy_status("cross-ns")
    victim = ws.apps.read_namespaced_deployment("victim", UNWATCHED)
    report("==== RBAC ====", f"identity {sa_user}",
           *(f"denied? {k}: {v[0]} {v[1][:160]}" for k, v in denied.items()),
           *(f"allowed? {k}: {v[0]}" for k, v in allowed.items()),
           f"targetRef.namespace strict: {strict[0]} {strict[1][:200]}",
           f"stored targetRef: {stored['spec']['targetRef']}",
           f"cross-ns policy status: {[(c['type'], c['status'], c['reason']) for c in st.get('conditions', [])]}")
    for what, (code, body) in denied.items():
        assert code == 403, (what, code, body)
        assert sa_user in body, (what, body)
    assert all(code == 200 for code, _ in allowed.values()), allowed
    assert strict[0] in (400, 422) and 'unknown field "spec.targetRef.namespace"' in strict[1], strict
    assert "namespace" not in stored["spec"]["targetRef"], stored["spec"]["targetRef"]
    found = condition(st, "TargetFound")
    assert found and found["status"] == "False" and found["reason"] == "TargetNotFound", st.get("conditions")
    assert ws.namespace in found["message"], found
    assert victim.spec.replicas == 0 and victim.metadata.generation == 1


# --------------------------------------------------------------------------------------------------
def test_invalid_policy_is_rejected_with_a_readable_message(workspace: Callable[[str], Workspace]) -> None:
    """The real API server's CRD validation refuses bad values and says which field and what is allowed;
    what OpenAPI cannot express (min > max) is reported by the controller in the policy's status."""
    ws = workspace("invalid")

    def create(name: str, spec: dict[str, Any]) -> tuple[int, str]:
        return api_result(lambda: ws.create_policy(policy(name, deployment_ref("chat"), MODEL, spec)))

    negative = create("negative", {"replicas": {"min": -1}})
    engine = create("engine", {"model": {"engine": "foo"}})
    missing = api_result(lambda: ws.create_policy({
        "apiVersion": f"{POLICY_GROUP}/{POLICY_VERSION}", "kind": "ModelScalingPolicy",
        "metadata": {"name": "no-target"}, "spec": {"model": {"name": MODEL}}}))
    inverted = create("inverted", {"replicas": {"min": 5, "max": 2}})
    report("==== invalid policies ====", f"min -1: {negative}", f"engine foo: {engine}",
           f"no targetRef: {missing}", f"min 5 > max 2: {inverted}")
    assert negative[0] == 422 and "spec.replicas.min" in negative[1] and "greater than or equal to 0" in negative[1]
    assert engine[0] == 422 and 'Unsupported value: "foo"' in engine[1] and '"vllm"' in engine[1], engine
    assert missing[0] == 422 and "spec.targetRef" in missing[1] and "Required value" in missing[1], missing

    if inverted[0] != 200:  # the CRD caught it (CEL): equally good
        assert inverted[0] == 422 and "min" in inverted[1] and "max" in inverted[1], inverted
        return
    ws.create_deployment(model_deployment("chat", 0, pool="none", ready_delay=1))
    once = ws.controller("invalid-once", "--once", start=False, prometheus_url=dead_prometheus_url())
    once.start(wait_ready=False)
    assert once.proc is not None
    once.proc.wait(60)
    st = ws.policy_status("inverted")
    ready = condition(st, "Ready")
    events = [(e.type, e.reason, e.message) for e in controller_events(ws.core, ws.namespace, "inverted")]
    report(f"inverted status: {ready}", f"events {events}")
    assert ready and ready["status"] == "False" and ready["reason"] == "InvalidSpec", st
    assert "min (5)" in ready["message"] and "max (2)" in ready["message"], ready
    assert ("Warning", "InvalidSpec") in [(t, r) for t, r, _ in events], events
    assert ws.replicas("chat") == 0


# --------------------------------------------------------------------------------------------------
@pytest.fixture
def kserve_crd_installed(workspace: Callable[[str], Workspace]) -> Any:
    ws = workspace("kserve")
    ext = client.ApiextensionsV1Api(ws.cluster.api_client())
    crd = kserve_crd()
    with contextlib.suppress(client.ApiException):
        ext.create_custom_resource_definition(crd)

    def established() -> bool:
        got = ext.read_custom_resource_definition(crd["metadata"]["name"])
        return any(c.type == "Established" and c.status == "True" for c in (got.status.conditions or []))

    wait_for(established, 30, "InferenceService CRD established")
    yield ws
    ws.close()
    with contextlib.suppress(client.ApiException):
        ext.delete_custom_resource_definition(crd["metadata"]["name"])


def test_kserve_external_and_none_modes(kserve_crd_installed: Workspace) -> None:
    """`external`: the controller scales `<isvc>-predictor` itself; `none`: it raises spec.predictor.minReplicas
    (KServe then sets the Deployment); `hpa` (the default): KServe's HPA owns replicas, so it writes nothing."""
    ws = kserve_crd_installed
    ws.add_gpu_nodes(1, gpus=8)

    def isvc(name: str) -> dict[str, Any]:
        obj: dict[str, Any] = ws.custom.get_namespaced_custom_object(KSERVE_GROUP, KSERVE_VERSION, ws.namespace,
                                                                      "inferenceservices", name)
        return obj

    for name, klass in (("chat-ext", "external"), ("chat-none", "none"), ("chat-hpa", "hpa")):
        ws.custom.create_namespaced_custom_object(KSERVE_GROUP, KSERVE_VERSION, ws.namespace, "inferenceservices",
                                                  inference_service(name, klass, min_replicas=1))
        # What KServe's RawDeployment reconciler would create (no KServe controller runs here).
        ws.create_deployment(model_deployment(f"{name}-predictor", 1, pool=ws.namespace, ready_delay=1.0))
        ws.create_policy(policy(name, {"apiVersion": f"{KSERVE_GROUP}/{KSERVE_VERSION}",
                                       "kind": "InferenceService", "name": name}, MODEL,
                                {"replicas": {"min": 3, "max": 6}}))
    once = ws.controller("kserve-once", "--once", start=False, prometheus_url=dead_prometheus_url())
    once.start(wait_ready=False)
    assert once.proc is not None
    once.proc.wait(60)

    ext, none, hpa = isvc("chat-ext"), isvc("chat-none"), isvc("chat-hpa")
    sts = {n: ws.policy_status(n) for n in ("chat-ext", "chat-none", "chat-hpa")}
    report("==== KServe ====",
           f"external: predictor replicas {ws.replicas('chat-ext-predictor')}, "
           f"minReplicas {ext['spec']['predictor']['minReplicas']}",
           f"none: predictor replicas {ws.replicas('chat-none-predictor')}, "
           f"minReplicas {none['spec']['predictor']['minReplicas']}",
           f"hpa: {[(c['type'], c['status'], c['reason']) for c in sts['chat-hpa'].get('conditions', [])]}")
    assert once.returncode == 0, once.log_tail()
    # external: the predictor Deployment, through /scale; the InferenceService is left alone.
    assert ws.replicas("chat-ext-predictor") == 3
    assert ext["spec"]["predictor"]["minReplicas"] == 1
    # none: spec.predictor.minReplicas, which KServe enforces on the Deployment; the Deployment is not touched.
    assert none["spec"]["predictor"]["minReplicas"] == 3
    assert ws.replicas("chat-none-predictor") == 1
    # hpa: blocked, with what to change.
    assert ws.replicas("chat-hpa-predictor") == 1 and hpa["spec"]["predictor"]["minReplicas"] == 1
    active = condition(sts["chat-hpa"], "ScalingActive")
    assert active and active["status"] == "False" and active["reason"] == "OtherAutoscalerOwnsReplicas", active
    assert "autoscalerClass" in active["message"], active
    for n in ("chat-ext", "chat-none"):
        assert sts[n]["lastDecision"]["applied"] is True, sts[n]["lastDecision"]


# --------------------------------------------------------------------------------------------------
def test_poison_policy_and_conflicting_writers(workspace: Callable[[str], Workspace]) -> None:
    """One namespace, one controller: the issue-11 specs the API server now refuses; a poison policy it
    still accepts (a time zone only zoneinfo can reject) and a corrupt stored state stay with their own
    policy while a healthy one scales on time; a second policy and an HPA on one Deployment get `Conflict`
    and its replicas never flap."""
    ws = workspace("isolation")
    autoscaling = client.AutoscalingV2Api(ws.cluster.api_client())
    ws.add_gpu_nodes(1, gpus=8)
    for name, replicas in (("healthy", 1), ("poison", 1), ("corrupt", 1), ("shared", 1), ("hpa-target", 1)):
        ws.create_deployment(model_deployment(name, replicas, pool=ws.namespace, ready_delay=1.0))

    def spec(**over: Any) -> dict[str, Any]:
        return {"intervalSeconds": INTERVAL, **over}

    def create(name: str, body: dict[str, Any]) -> tuple[int, str]:
        return api_result(lambda: ws.create_policy(policy(name, deployment_ref("poison"), MODEL, spec(**body))))

    issue_specs: dict[str, dict[str, Any]] = {
        "tz-too-long": {"replicas": {"floorSchedule": [{"start": "08:00", "end": "09:00", "minReplicas": 1,
                                                        "timezone": "A" * 300}]}},
        "history-30-step-60": {"forecast": {"historySeconds": 30, "stepSeconds": 60}},
        "coldstart-1e308": {"coldStart": {"imagePullSeconds": 1e308}},
        "maxstep-1.7e308": {"scaleUp": {"maxStepPercent": 1.7e308}},
        "step-1e-6": {"forecast": {"stepSeconds": 1e-6}},
        "history-of-5-steps": {"forecast": {"historySeconds": 300, "stepSeconds": 60}},  # a CEL rule
        "from-zero-at-min-1": {"scaleFromZero": {"query": "sum(gateway_pending)"}},  # a CEL rule (min defaults 1)
    }
    refused = {label: create(f"refused-{label}", body) for label, body in issue_specs.items()}
    # the same rule admits a policy that may rest at 0 (removed at once: it only proves the API server's schema)
    from_zero = create("from-zero", {"replicas": {"min": 0, "max": 4}, "dryRun": True,
                                     "scaleFromZero": {"query": "sum(gateway_pending)", "idleSeconds": 600}})
    if from_zero[0] == 200:
        ws.custom.delete_namespaced_custom_object(POLICY_GROUP, POLICY_VERSION, ws.namespace, POLICY_PLURAL,
                                                  "from-zero")
    ws.create_policy(policy("poison", deployment_ref("poison"), MODEL, spec(replicas={"min": 2, "max": 4,
        "floorSchedule": [{"start": "00:00", "end": "23:59", "minReplicas": 2, "timezone": "America"}]})))
    corrupt = ws.create_policy(policy("corrupt", deployment_ref("corrupt"), MODEL, spec(dryRun=True)))
    ws.custom.patch_namespaced_custom_object_status(
        POLICY_GROUP, POLICY_VERSION, ws.namespace, POLICY_PLURAL, "corrupt",
        {"status": {"coreState": {"panicUntil": "x", "decisions": "garbage"}}})
    assert corrupt["metadata"]["name"] == "corrupt"
    ws.create_policy(policy("shared-a", deployment_ref("shared"), MODEL, spec(replicas={"min": 3, "max": 6})))
    ws.create_policy(policy("shared-b", deployment_ref("shared"), MODEL, spec(replicas={"min": 5, "max": 6})))
    autoscaling.create_namespaced_horizontal_pod_autoscaler(ws.namespace, {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "other-hpa"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "hpa-target"},
                 "minReplicas": 1, "maxReplicas": 3}})
    ws.defer(lambda: autoscaling.delete_namespaced_horizontal_pod_autoscaler("other-hpa", ws.namespace))
    ws.create_policy(policy("hpa-policy", deployment_ref("hpa-target"), MODEL, spec(replicas={"min": 3, "max": 6})))
    shared_hist = ws.deployment_history("shared")
    hpa_hist = ws.deployment_history("hpa-target")

    ctl = ws.controller("isolation", prometheus_url=dead_prometheus_url())  # demand unknown: floors only
    ws.create_policy(policy("healthy", deployment_ref("healthy"), MODEL, spec(replicas={"min": 3, "max": 6})))
    created = time.time()
    wait_for(lambda: ws.replicas("healthy") == 3, 4 * INTERVAL + 5, "the healthy policy scales to its floor")
    healthy_s = time.time() - created
    wait_for(lambda: (condition(ws.policy_status("shared-b"), "Conflict") or {}).get("status") == "True",
             4 * INTERVAL + 5, "Conflict on the second policy")
    wait_for(lambda: (condition(ws.policy_status("hpa-policy"), "Conflict") or {}).get("status") == "True",
             4 * INTERVAL + 5, "Conflict on the HPA's target")
    wait_for(lambda: ws.policy_status("corrupt").get("lastDecision"), 4 * INTERVAL + 5, "the corrupt one decides")
    time.sleep(3 * INTERVAL)  # a few more ticks: nothing may flap
    assert ctl.alive, ctl.log_tail()
    poison = condition(ws.policy_status("poison"), "Ready") or {}
    shared_b = ws.policy_status("shared-b")
    hpa_policy = ws.policy_status("hpa-policy")
    corrupt_st = ws.policy_status("corrupt")
    ev = {name: [(e.reason, e.message) for e in controller_events(ws.core, ws.namespace, name)]
          for name in ("poison", "corrupt", "shared-b", "hpa-policy")}
    healthz = httpx.get(f"http://127.0.0.1:{ctl.health_port}/healthz", timeout=2)
    report("==== isolation and conflicts ====", f"refused by the API server: {refused}",
           f"healthy scaled 1 -> 3 in {healthy_s:.1f}s (interval {INTERVAL}s)", f"poison Ready: {poison}",
           f"shared spec.replicas {[c.replicas for c in shared_hist.spec_changes()]}; shared-b Conflict "
           f"{condition(shared_b, 'Conflict')}",
           f"hpa-target spec.replicas {[c.replicas for c in hpa_hist.spec_changes()]}; hpa-policy Conflict "
           f"{condition(hpa_policy, 'Conflict')}", f"events {ev}", f"/healthz {healthz.status_code}")
    for label, (code, msg) in refused.items():
        assert code == 422, (label, code, msg)
    assert "historySeconds must hold 10 to 100000 steps" in refused["history-of-5-steps"][1], refused
    assert "scaleFromZero needs replicas.min 0" in refused["from-zero-at-min-1"][1], refused
    assert from_zero[0] == 200, from_zero
    assert healthy_s <= 2 * INTERVAL + 3, healthy_s
    assert poison.get("status") == "False" and poison.get("reason") == "InvalidSpec", poison
    assert "timezone" in poison["message"], poison
    assert ws.replicas("poison") == 1
    assert ("StateDiscarded" in [r for r, _ in ev["corrupt"]]), ev["corrupt"]
    assert (condition(corrupt_st, "Ready") or {}).get("status") == "True", corrupt_st.get("conditions")
    assert [c.replicas for c in shared_hist.spec_changes()] == [1, 3], "one write by the owner, no flapping"
    assert "policy " + ws.namespace + "/shared-a" in (condition(shared_b, "Conflict") or {})["message"]
    assert any(r == "Conflict" and "shared-a" in m for r, m in ev["shared-b"]), ev["shared-b"]
    assert [c.replicas for c in hpa_hist.spec_changes()] == [1], "the HPA's target is never written"
    assert any(r == "Conflict" and "HorizontalPodAutoscaler" in m and "other-hpa" in m for r, m in ev["hpa-policy"])
    assert healthz.status_code == 200
