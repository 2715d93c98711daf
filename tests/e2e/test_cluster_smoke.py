"""Smoke test of the e2e control plane: real apiserver/scheduler/controllers + KWOK GPU nodes.

Needs the binaries from .ci/build-kube.sh; fails (does not skip) without them.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from .cluster import (
    GPU_RESOURCE,
    KWOK_NODE_SELECTOR,
    KWOK_TOLERATION,
    READY_DELAY_ANNOTATION,
    LocalCluster,
    NodeProvisioner,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

COLD_START = 6.0  # seconds, set per pod with the KWOK pod-ready delay annotation


def _namespace(cluster: LocalCluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    cluster.core_v1().create_namespace({"metadata": {"name": name}})
    return name


def _deployment(
    name: str, replicas: int, gpus: int = 1, cold_start: float = COLD_START, node: str | None = None
) -> dict[str, Any]:
    labels = {"app": name}
    selector = {**KWOK_NODE_SELECTOR, **({"kubernetes.io/hostname": node} if node else {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {READY_DELAY_ANNOTATION: f"{cold_start}s"}},
                "spec": {
                    "nodeSelector": selector,
                    "tolerations": [KWOK_TOLERATION],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "vllm",
                        "image": "vllm/vllm-openai:fake",
                        "resources": {"requests": {GPU_RESOURCE: str(gpus), "cpu": "1"},
                                      "limits": {GPU_RESOURCE: str(gpus)}},
                    }],
                },
            },
        },
    }


def _cond(pod: Any, type_: str) -> Any:
    return next((c for c in (pod.status.conditions or []) if c.type == type_), None)


def _ready(pod: Any) -> bool:
    c = _cond(pod, "Ready")
    return bool(c and c.status == "True")


def _pods(cluster: LocalCluster, ns: str, app: str) -> list[Any]:
    return [p for p in cluster.core_v1().list_namespaced_pod(ns, label_selector=f"app={app}").items
            if p.metadata.deletion_timestamp is None]


def _wait_ready(cluster: LocalCluster, ns: str, app: str, n: int, timeout: float) -> list[Any]:
    def check() -> list[Any] | None:
        pods = _pods(cluster, ns, app)
        ready = [p for p in pods if _ready(p)]
        return ready if len(ready) >= n else None

    return wait_until(check, timeout, interval=0.5, what=f"{n} ready pods of {ns}/{app}")


@pytest.fixture
def cleanup(local_cluster: LocalCluster) -> Iterator[list[str]]:
    """Names of nodes (and namespaces, prefixed 'ns/') to delete after the test; the cluster is shared."""
    items: list[str] = []
    yield items
    for it in items:
        if it.startswith("ns/"):
            with contextlib.suppress(Exception):
                local_cluster.core_v1().delete_namespace(it[3:])
        else:
            local_cluster.delete_node(it)


def test_gpu_pods_cold_start_and_node_provisioning(local_cluster: LocalCluster, cleanup: list[str]) -> None:
    c = local_cluster
    ns = _namespace(c, "smoke")
    node = f"gpu-{ns}"
    cleanup += [f"ns/{ns}", node]
    c.add_gpu_node(node, gpus=8)
    n = c.core_v1().read_node(node)
    assert n.status.allocatable[GPU_RESOURCE] == "8"
    assert n.metadata.annotations["kwok.x-k8s.io/node"] == "fake"

    apps = c.apps_v1()
    apps.create_namespaced_deployment(ns, _deployment("llm", 1))

    # 1) One pod: bound to the KWOK node, Running, then Ready only after the cold start.
    t0 = time.monotonic()
    (pod,) = _wait_ready(c, ns, "llm", 1, timeout=COLD_START + 30)
    assert pod.spec.node_name == node
    assert pod.status.phase == "Running"
    started = pod.status.container_statuses[0].state.running.started_at
    ready_at = _cond(pod, "Ready").last_transition_time
    cold = (ready_at - started).total_seconds()
    assert COLD_START - 1.5 <= cold <= COLD_START + 5, f"cold start {cold:.1f}s, expected ~{COLD_START}s"
    assert time.monotonic() - t0 >= COLD_START - 1

    # 2) Beyond GPU capacity: 10 pods x 1 GPU on an 8-GPU node -> 2 Pending/Unschedulable.
    apps.patch_namespaced_deployment_scale("llm", ns, {"spec": {"replicas": 10}})

    def unschedulable() -> list[Any] | None:
        pods = _pods(c, ns, "llm")
        pend = [p for p in pods if p.status.phase == "Pending" and not p.spec.node_name
                and (cnd := _cond(p, "PodScheduled")) is not None
                and cnd.status == "False" and cnd.reason == "Unschedulable"]
        return pend if len(pods) == 10 and len(pend) == 2 else None

    pending = wait_until(unschedulable, 30, interval=0.5, what="2 unschedulable pods")
    msg = _cond(pending[0], "PodScheduled").message or ""
    assert "nvidia.com/gpu" in msg, msg
    _wait_ready(c, ns, "llm", 8, timeout=COLD_START + 30)

    # 3) The provisioner adds a node after its delay; the pending pods land there and turn Ready.
    prov = NodeProvisioner(c, delay=2.0, max_nodes=2, gpus_per_node=8, namespace=ns,
                           name_prefix=f"prov-{ns}")
    with prov:
        ready = _wait_ready(c, ns, "llm", 10, timeout=COLD_START + 45)
    cleanup += prov.provisioned_nodes
    assert len(prov.events) == 1, prov.events
    new_node = prov.events[0].node
    on_new = [p for p in ready if p.spec.node_name == new_node]
    assert len(on_new) == 2, [(p.metadata.name, p.spec.node_name) for p in ready]
    assert sorted(prov.events[0].trigger_pods) == sorted(f"{ns}/{p.metadata.name}" for p in pending)

    # Scale down: pods on fake nodes are deleted by KWOK's pod-delete stage.
    apps.patch_namespaced_deployment_scale("llm", ns, {"spec": {"replicas": 0}})
    wait_until(lambda: not c.core_v1().list_namespaced_pod(ns).items, 30, what="pods deleted")
    c.check_alive()


def test_restart_apiserver(local_cluster: LocalCluster, cleanup: list[str]) -> None:
    c = local_cluster
    ns = _namespace(c, "restart")
    node = f"gpu-{ns}"
    cleanup += [f"ns/{ns}", node]
    c.add_gpu_node(node, gpus=2)
    c.core_v1().create_namespaced_config_map(ns, {"metadata": {"name": "keep"}, "data": {"k": "v"}})
    old_pid = c.procs["kube-apiserver"].pid

    c.restart_apiserver()

    assert c.procs["kube-apiserver"].pid != old_pid
    assert c.core_v1().read_namespaced_config_map("keep", ns).data == {"k": "v"}  # same etcd
    # Scheduler, controllers and KWOK reconnect: a new workload still gets scheduled and Ready.
    c.apps_v1().create_namespaced_deployment(ns, _deployment("after", 2, cold_start=1.0, node=node))
    pods = _wait_ready(c, ns, "after", 2, timeout=60)
    assert {p.spec.node_name for p in pods} == {node}
    c.check_alive()
