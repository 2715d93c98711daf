"""The warm-capacity drill on the real scheduler: a burst preempts placeholder pods, and the replicas start on
their nodes without waiting for the node provisioner.

Node A (2 GPUs) runs the model's 2 base replicas; node B (2 GPUs) is added empty. The policy asks for 2 warm
slots (spec.warmCapacity): the controller creates the placeholder Deployment `llama-8b-warm` (owned by the
policy, the chart's PriorityClass `inference-autoscaler-warm`, value -10, preemptionPolicy Never), whose 2
pods run on node B. A flash crowd makes the controller scale 2 -> 4 (replicas.max); no GPU is free, so the
scheduler preempts the placeholders (the replicas' priority 0 is higher) and binds the replicas to node B.
The placeholders the ReplicaSet recreates stay Pending until the node provisioner (a 6 s boot) adds a node
for them: that node is theirs, not the replicas'. Before that, the real API server's CRD refuses bad
warmCapacity and scaleDown.deletionCost fields with messages naming the field.

Needs .ci/build-kube.sh, .ci/install-helm.sh and .ci/install-prometheus.sh; fails (never skips) without.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from autoscaler.observe.warm import WARM_FOR_LABEL

from .drill.history import condition, wait_for
from .drill.load import burst_trace, flash_crowd
from .drill.manifests import deployment_ref, model_deployment, policy
from .drill.tools import api_result
from .drill.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

APP, MODEL = "llama-8b", "meta-llama/Llama-3.1-8B-Instruct"
READY_DELAY, RUNNING_DELAY, NODE_BOOT = 8.0, 1.0, 6.0
INTERVAL = 2.0
BASE, TOP, SLOTS = 2, 4, 2
# 6 req/s fits the 2 base replicas; the flash crowd (5x) needs more than the 4 replicas.max allows.
# The burst starts 25 s after the emulator: the set-up before it (Prometheus, the CRD checks, the controller,
# placeholders running) took up to 16 s on a loaded 2-core machine.
BURST = flash_crowd(base_rps=6.0, start_s=25.0, hold_s=40.0, duration_s=120.0, ramp_s=3.0)


def warm_policy() -> dict[str, Any]:
    return policy("llama-8b", deployment_ref(APP), MODEL, {
        "intervalSeconds": INTERVAL,
        "metrics": {"stalenessSeconds": 3 * INTERVAL},
        "replicas": {"min": BASE, "max": TOP},
        "slo": {"ttftSeconds": 2.0},
        "capacity": {"maxConcurrency": 16},
        "coldStart": {"schedulingSeconds": 1.0, "nodeProvisioningSeconds": 1.5 * NODE_BOOT,
                      "imagePullSeconds": RUNNING_DELAY, "weightLoadSeconds": 0.0, "warmupSeconds": READY_DELAY,
                      "spread": 0.2},
        "scaleUp": {"periodSeconds": 10, "backlogDrainSeconds": 20},
        "scaleDown": {"stabilizationWindowSeconds": 300},
        "warmCapacity": {"enabled": True, "minSlots": SLOTS, "maxSlots": SLOTS},
    })


def rejected(ws: Workspace, name: str, spec: dict[str, Any]) -> tuple[int, str]:
    """(HTTP status, the API server's message) of creating a policy that the CRD should refuse."""
    return api_result(lambda: ws.create_policy(policy(name, deployment_ref(APP), MODEL, spec)))


def report(lines: list[str]) -> None:
    print("\n" + "\n".join(lines), file=sys.stderr)


def _pods(ws: Workspace, selector: str) -> list[Any]:
    return [p for p in ws.core.list_namespaced_pod(ws.namespace, label_selector=selector).items
            if p.metadata.deletion_timestamp is None]


def _ready(p: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))


def test_a_burst_preempts_placeholders_and_replicas_start_without_a_new_node(
        workspace: Callable[[str], Workspace]) -> None:
    t0 = time.monotonic()
    ws = workspace("warm")
    (node_a,) = ws.add_gpu_nodes(1, gpus=BASE)
    ws.create_deployment(model_deployment(APP, BASE, pool=ws.namespace, ready_delay=READY_DELAY,
                                          running_delay=RUNNING_DELAY))
    ws.wait_ready(APP, BASE, timeout=READY_DELAY + 30)
    base_pods = {p.metadata.name for p in _pods(ws, f"app={APP}")}
    (node_b,) = ws.add_gpu_nodes(1, gpus=SLOTS)  # empty: the warm node
    prov = ws.provisioner(delay=NODE_BOOT, max_nodes=1, gpus_per_node=SLOTS)

    emu = ws.emulator(burst_trace(BURST), APP, MODEL)
    emu.start()
    prom = ws.prometheus(emu)
    prom.wait_for("vllm:num_requests_waiting", n=BASE)
    # The real API server's CRD refuses bad warm-capacity and deletion-cost fields, naming the field.
    bad = {
        "order": rejected(ws, "bad-order", {"warmCapacity": {"enabled": True, "minSlots": 3, "maxSlots": 1}}),
        "class": rejected(ws, "bad-class", {"warmCapacity": {"priorityClassName": "Warm_Class"}}),
        "path": rejected(ws, "bad-path", {"warmCapacity": {"weightsCachePath": "models"}}),
        "slots": rejected(ws, "bad-slots", {"warmCapacity": {"minSlots": -1}}),
        "cost": rejected(ws, "bad-cost", {"scaleDown": {"deletionCost": "maybe"}}),
    }
    ws.create_policy(warm_policy())
    ctl = ws.controller("warm", prometheus_url=prom.url)
    placeholders = f"{WARM_FOR_LABEL}=llama-8b"

    # Warm slots: the placeholders run on node B before the burst.
    wait_for(lambda: sum(1 for p in _pods(ws, placeholders) if p.status.phase == "Running") == SLOTS,
             30, f"{SLOTS} running placeholders")
    warm_dep = ws.apps.read_namespaced_deployment("llama-8b-warm", ws.namespace)
    held = _pods(ws, placeholders)
    held_names = {p.metadata.name for p in held}
    assert {p.spec.node_name for p in held} == {node_b}, [(p.metadata.name, p.spec.node_name) for p in held]
    assert all(p.spec.priority_class_name == "inference-autoscaler-warm" and p.spec.priority < 0 for p in held)
    assert warm_dep.metadata.owner_references[0].kind == "ModelScalingPolicy"
    setup_s = time.monotonic() - t0
    burst_at = emu.started_wall + BURST.start_s
    assert time.time() < burst_at, "the placeholders were not running before the burst"

    # The burst: the controller scales up; the scheduler preempts the placeholders for the new replicas.
    wait_for(lambda: ws.replicas(APP) == TOP, BURST.start_s + 40, f"scale-up to {TOP}")
    scaled_at = time.time()
    wait_for(lambda: sum(1 for p in _pods(ws, f"app={APP}") if _ready(p)) == TOP, 60, f"{TOP} ready replicas")
    ready_at = time.time()
    new = [p for p in _pods(ws, f"app={APP}") if p.metadata.name not in base_pods]
    # The replicas' observed stages reach the status (learned samples are written in the tick they arrive).
    wait_for(lambda: len(((ws.policy_status("llama-8b").get("coreState") or {}).get("coldStart") or {})
                         .get("warmup/warm") or []) >= TOP - BASE, 30, "warm stages in the status")
    status = ws.policy_status("llama-8b")
    ctl.stop()
    assert ctl.returncode == 0, ctl.log_tail()

    cold = (status.get("coreState") or {}).get("coldStart") or {}
    preempted = [e for e in ws.core.list_namespaced_event(ws.namespace).items if e.reason == "Preempted"]
    report([
        "==== warm drill report ====",
        f"setup {setup_s:.1f}s; wall {time.monotonic() - t0:.1f}s; burst {BURST}",
        f"nodes: A={node_a} (base), B={node_b} (warm); provisioned {[(e.node, e.trigger_pods) for e in prov.events]}",
        f"placeholders before the burst {sorted(held_names)} on {node_b}",
        f"scale-up to {TOP} {scaled_at - burst_at:.1f}s after the burst; all ready "
        f"{ready_at - scaled_at:.1f}s after it",
        f"new replicas: {[(p.metadata.name, p.spec.node_name) for p in new]}",
        f"Preempted events: {[(e.involved_object.name, e.message) for e in preempted]}",
        f"observed stages (coreState.coldStart): {cold}",
        f"learned: {(status.get('learned') or {}).get('coldStart')}",
        f"warm status: {status.get('warmCapacity')}; last decision components: "
        f"{(status.get('lastDecision') or {}).get('components')}",
        *(f"CRD refuses {k}: {code} {msg[:200]}" for k, (code, msg) in bad.items()),
    ])

    # 0. The CRD's checks, on the real API server.
    assert all(code == 422 for code, _ in bad.values()), bad
    assert "spec.warmCapacity" in bad["order"][1] and "minSlots must be ≤ maxSlots" in bad["order"][1], bad
    assert "spec.warmCapacity.priorityClassName" in bad["class"][1], bad
    assert "spec.warmCapacity.weightsCachePath" in bad["path"][1], bad
    assert "spec.warmCapacity.minSlots" in bad["slots"][1] and "greater than or equal to 0" in bad["slots"][1], bad
    assert "spec.scaleDown.deletionCost" in bad["cost"][1] and "boolean" in bad["cost"][1], bad

    # 1. The new replicas took the warm slots: bound to node B, which existed before the burst.
    assert len(new) == TOP - BASE, new
    assert {p.spec.node_name for p in new} == {node_b}, [(p.metadata.name, p.spec.node_name) for p in new]
    # 2. Through the scheduler's priority preemption of the placeholders.
    assert {e.involved_object.name for e in preempted} >= held_names, preempted
    # 3. Without waiting for the node provisioner: any node it added was for the recreated placeholders only,
    #    and the replicas were ready well within what a new node plus the cold start would take.
    for e in prov.events:
        assert all(t.split("/", 1)[1].startswith("llama-8b-warm-") for t in e.trigger_pods), e
    assert ready_at - scaled_at < NODE_BOOT + RUNNING_DELAY + READY_DELAY, ready_at - scaled_at
    # 4. The observed stages say so: every new replica reports a warm start, none a node provisioning. The
    #    base replicas report their own node stage under "default" (the controller learns from pods that were
    #    already there) as scheduling: node A is older than they are, so even when the scheduler's node cache
    #    lagged the fresh KWOK node and said FailedScheduling first, they did not wait for a new node.
    assert len(cold.get("scheduling/warm") or []) == TOP - BASE, cold
    assert not any(k.startswith("node_provisioning/") for k in cold), cold
    assert len(cold.get("scheduling/default") or []) <= BASE, cold
    assert all(s < NODE_BOOT for s in cold["scheduling/warm"]), cold
    # 5. The decision keeps the pool and says so.
    assert status["lastDecision"]["components"]["warm_slots"] == SLOTS, status["lastDecision"]
    assert (condition(status, "Ready") or {}).get("status") == "True", status.get("conditions")
