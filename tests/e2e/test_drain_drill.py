"""The cordon-and-drain drill on a real control plane with KWOK GPU nodes.

Steady load from the vLLM emulator (sized by the Deployment's Ready pods) on 3 replicas, all on one 4-GPU
node. The operator cordons that node and, once the controller has surged (one interval), drains it through
the eviction API (what `kubectl drain` does), with a PodDisruptionBudget (maxUnavailable 1, the chart's
documented setting) on the model's pods. The controller counts the node's replicas as leaving and surges;
the surge's pods
wait for the node provisioner's new node, turn Ready after the KWOK cold start; only then does the PDB
admit the evictions, one at a time. Checked: the surge, the replacements Ready on another node before the
first eviction, `drain-check` saying no then yes, status.drain and its events, every eviction done, and the
emulator's TTFT attainment over the whole drill within the SLO.

Needs .ci/build-kube.sh, .ci/install-helm.sh and .ci/install-prometheus.sh; fails (never skips) without.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .drill.history import condition, controller_events, wait_for
from .drill.load import steady_trace
from .drill.manifests import deployment_ref, model_deployment, policy
from .drill.tools import REPO_ROOT, autoscaler_command
from .drill.workspace import Workspace

if TYPE_CHECKING:
    from simulations.fleet import RequestFleet

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

APP, MODEL, POLICY = "llama-8b", "meta-llama/Llama-3.1-8B-Instruct", "llama-drain"
READY_DELAY, RUNNING_DELAY, NODE_BOOT = 8.0, 1.0, 6.0
GPUS_PER_NODE = 4
REPLICAS, MAX_REPLICAS = 3, 8  # the floor binds: the steady load needs fewer
RPS = 4.0  # ~0.6 replica-equivalents of work (the bundled Azure code slice at the capacity prior)
SLO_TTFT, SLO_ATTAINMENT = 2.0, 0.99
INTERVAL = 2.0


def drain_policy() -> dict[str, Any]:
    return policy(POLICY, deployment_ref(APP), MODEL, {
        "intervalSeconds": INTERVAL,
        "metrics": {"stalenessSeconds": 3 * INTERVAL},
        "replicas": {"min": REPLICAS, "max": MAX_REPLICAS},
        "slo": {"ttftSeconds": SLO_TTFT},
        "capacity": {"maxConcurrency": 16},
        "coldStart": {"schedulingSeconds": 1.0, "nodeProvisioningSeconds": NODE_BOOT, "imagePullSeconds": 1.0,
                      "weightLoadSeconds": 0.0, "warmupSeconds": READY_DELAY, "spread": 0.2},
        "scaleDown": {"stabilizationWindowSeconds": 30, "periodSeconds": 4, "maxStepReplicas": 2,
                      "maxStepPercent": 50},
    })


def pdb(name: str) -> dict[str, Any]:
    """What charts/inference-autoscaler/templates/pdb.yaml renders for {name, selector, maxUnavailable: 1}."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "maxUnavailable": 1}}


def _ready(p: Any) -> bool:
    return p.metadata.deletion_timestamp is None and any(
        c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))


class Drainer:
    """The operator's `kubectl drain NODE` after the cordon: evict every pod of the app on the node through
    the eviction API, retrying while the PDB refuses (429), like kubectl drain."""

    def __init__(self, core: client.CoreV1Api, namespace: str, node: str, app: str) -> None:
        self.core, self.namespace, self.node, self.app = core, namespace, node, app
        self.evicted: list[tuple[float, str]] = []
        self.refused = 0
        self.done_at: float | None = None
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="drainer", daemon=True)

    def start(self) -> Drainer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            pods = [p for p in self.core.list_namespaced_pod(self.namespace, label_selector=f"app={self.app}",
                                                              field_selector=f"spec.nodeName={self.node}").items]
            if not pods:
                self.done_at = time.time()
                return
            for p in pods:
                if p.metadata.deletion_timestamp is not None:
                    continue
                try:
                    self.core.create_namespaced_pod_eviction(p.metadata.name, self.namespace, client.V1Eviction(
                        metadata=client.V1ObjectMeta(name=p.metadata.name, namespace=self.namespace)))
                    self.evicted.append((time.time(), p.metadata.name))
                except ApiException as e:
                    if e.status == 429:
                        self.refused += 1
                    else:
                        self.errors.append(f"{e.status} {e.reason}")
            self._stop.wait(0.5)


def drain_check(kubeconfig: Any, namespace: str, node: str) -> tuple[int, str]:
    p = subprocess.run([*autoscaler_command(), "drain-check", node, f"--kubeconfig={kubeconfig}",
                        f"--namespaces={namespace}"], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    return p.returncode, (p.stdout + p.stderr).strip()


def test_cordon_and_drain_keeps_the_slo(workspace: Callable[[str], Workspace]) -> None:
    t0 = time.monotonic()
    ws = workspace("drain")
    (node,) = ws.add_gpu_nodes(1, gpus=GPUS_PER_NODE)
    ws.create_deployment(model_deployment(APP, REPLICAS, pool=ws.namespace, ready_delay=READY_DELAY,
                                          running_delay=RUNNING_DELAY))
    ws.wait_ready(APP, REPLICAS, timeout=READY_DELAY + 30)
    policy_api = client.PolicyV1Api(ws.cluster.api_client())
    policy_api.create_namespaced_pod_disruption_budget(ws.namespace, pdb(APP))
    ws.defer(lambda: policy_api.delete_namespaced_pod_disruption_budget(APP, ws.namespace))
    prov = ws.provisioner(delay=NODE_BOOT, max_nodes=1, gpus_per_node=GPUS_PER_NODE)
    trace = steady_trace(RPS, 400.0)
    emu = ws.emulator(trace, APP, MODEL)
    emu.start()
    prom = ws.prometheus(emu)
    prom.wait_for("vllm:num_requests_waiting", n=REPLICAS)
    ws.create_policy(drain_policy())
    status_hist = ws.policy_history(POLICY)
    ctl = ws.controller("drain", prometheus_url=prom.url)
    wait_for(lambda: (condition(ws.policy_status(POLICY), "MetricsAvailable") or {}).get("status") == "True",
             30, "MetricsAvailable=True")
    assert ws.replicas(APP) == REPLICAS

    # The operator asks before cordoning: not safe, the replicas have nowhere to go yet.
    code_before, out_before = drain_check(ws.cluster.kubeconfig_path, ws.namespace, node)

    # Cordon; drain (kubectl drain) as soon as the controller has surged: the PDB holds the evictions until
    # the replacements are Ready. (Before the surge, maxUnavailable 1 would admit one eviction at once.)
    cordoned_at = time.time()
    ws.cluster.kubectl("cordon", node)
    wait_for(lambda: ws.replicas(APP) >= 2 * REPLICAS or None, 4 * INTERVAL + 5, "the surge")
    surged_at = time.time()
    # The surge is in spec.replicas (NodeLeaving): from now on the PDB counts against 2x the replicas.
    drainer = Drainer(ws.core, ws.namespace, node, APP).start()
    ws.defer(drainer.stop)
    code_waiting, out_waiting = drain_check(ws.cluster.kubeconfig_path, ws.namespace, node)

    def staying_ready() -> int:
        pods = ws.core.list_namespaced_pod(ws.namespace, label_selector=f"app={APP}").items
        return sum(1 for p in pods if _ready(p) and p.spec.node_name != node)

    replacements_at = wait_for(lambda: time.time() if staying_ready() >= REPLICAS else None,
                               NODE_BOOT + READY_DELAY + 40, "replacements Ready on another node")
    status_ready = wait_for(lambda: next((d for d in ws.policy_status(POLICY).get("drain") or []
                                          if d.get("node") == node and d.get("safe")), None),
                            4 * INTERVAL + 5, "status.drain safe")
    wait_for(lambda: drainer.done_at, 90, "the drain to finish (every pod of the node evicted)")
    drained_at = drainer.done_at
    assert drained_at is not None
    code_after, out_after = drain_check(ws.cluster.kubeconfig_path, ws.namespace, node)
    time.sleep(5.0)  # requests that arrived during the drain get their first token
    status = ws.policy_status(POLICY)
    events = controller_events(ws.core, ws.namespace, POLICY)
    ev = [e.reason for e in events]
    ctl.stop()
    emu.stop()

    # When the replacements turned Ready, from the pods' own Ready condition (whole seconds, truncated):
    # the surge's pods on the new node are the first REPLICAS to turn Ready off the drained node.
    pods = ws.core.list_namespaced_pod(ws.namespace, label_selector=f"app={APP}").items
    ready_times = sorted(c.last_transition_time.timestamp() for p in pods if p.spec.node_name != node
                         for c in (p.status.conditions or []) if c.type == "Ready" and c.status == "True")
    replacements_ready_at = ready_times[REPLICAS - 1] if len(ready_times) >= REPLICAS else None

    fleet = cast("RequestFleet", emu.server.driver.fleet)  # the drill's emulator replays a RequestFleet
    started = emu.started_wall
    ttft = np.asarray(fleet.book.ttft, dtype=float)
    arrival = trace.arrival_s[: len(ttft)]
    in_drill = (arrival >= cordoned_at - started - 10) & (arrival <= drained_at - started)
    ok = np.where(np.isfinite(ttft), ttft, np.inf) <= SLO_TTFT
    attainment = float(ok[in_drill].mean())
    first_eviction = min(t for t, _ in drainer.evicted)
    print("\n".join([
        "==== drain drill report ====",
        f"wall {time.monotonic() - t0:.1f}s; cordoned {node}; surge to >= {2 * REPLICAS} "
        f"{surged_at - cordoned_at:.1f}s after the cordon; provisioned {prov.provisioned_nodes}",
        f"decision reasons: {status_hist.reasons()}",
        f"replacements Ready {replacements_at - cordoned_at:.1f}s after the cordon (seen by polling), "
        f"{(replacements_ready_at or 0) - cordoned_at:.1f}s (pods' Ready time, whole s); first eviction "
        f"{first_eviction - cordoned_at:.1f}s; drained {drained_at - cordoned_at:.1f}s; PDB refusals "
        f"{drainer.refused}; evictions {[(round(t - cordoned_at, 1), n) for t, n in drainer.evicted]}",
        f"drain-check before cordon: {code_before} {out_before!r}",
        f"drain-check waiting: {code_waiting} {out_waiting!r}",
        f"drain-check after: {code_after} {out_after!r}",
        f"status.drain when safe: {status_ready}",
        f"events: {[(e.reason, e.message[:100]) for e in events]}",
        f"emulator TTFT <= {SLO_TTFT}s: {attainment:.4f} of {int(in_drill.sum())} requests in the drill",
    ]), file=sys.stderr)

    assert not drainer.errors, drainer.errors
    assert code_before == 1 and "cordon it first" in out_before, out_before
    assert code_waiting == 1 and "(cordoned)" in out_waiting, out_waiting
    assert code_after == 0, out_after  # nothing left on the node
    # The surge, and replacements Ready elsewhere before anything was evicted.
    assert prov.events, "the surge's pods never waited for a node"
    assert replacements_ready_at is not None and first_eviction >= replacements_ready_at, \
        (first_eviction, replacements_ready_at, ready_times)
    assert drainer.refused > 0, "the PDB never held an eviction back"
    assert len(drainer.evicted) == REPLICAS
    assert status_ready["replicas"] >= 1 and status_ready["needed"] == REPLICAS, status_ready
    assert "NodeLeaving" in ev and "ReplacementsReady" in ev, ev
    assert "ScaleUpLeaving" in status_hist.reasons(), status_hist.reasons()
    assert not status.get("drain"), status.get("drain")  # nothing of the target is left on the node
    # The SLO held throughout.
    assert in_drill.sum() > 50 and attainment >= SLO_ATTAINMENT, attainment
    assert ctl.returncode == 0, ctl.log_tail()
