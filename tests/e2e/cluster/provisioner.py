"""A tiny node provisioner standing in for cluster-autoscaler / Karpenter.

A background thread polls the API server for Pending pods whose
``PodScheduled`` condition is ``False`` with reason ``Unschedulable``. Once
such a pod has waited ``delay`` seconds (the simulated node boot time), the
provisioner adds enough KWOK GPU nodes for the GPUs those pods request,
bounded by ``max_nodes``. Pods it already provisioned for are not counted
again for ``cover_timeout`` seconds, so one burst of pending pods does not
trigger repeated scale-ups while the scheduler catches up.

Optionally (``scale_down_after``) it deletes provisioned nodes that have had
no pods for that long, like cluster-autoscaler's scale-down.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .cluster import GPU_RESOURCE, LocalCluster


@dataclass
class ProvisionEvent:
    at: float  # time.time()
    node: str
    trigger_pods: list[str]


def _gpu_request(pod: Any) -> int:
    total = 0
    for c in pod.spec.containers or []:
        res = c.resources
        for src in (res.limits if res else None, res.requests if res else None):
            if src and GPU_RESOURCE in src:
                total += int(src[GPU_RESOURCE])
                break
    return total


def is_unschedulable(pod: Any) -> bool:
    if pod.status is None or pod.status.phase != "Pending" or pod.spec.node_name:
        return False
    if pod.metadata.deletion_timestamp is not None:
        return False
    return any(
        c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
        for c in (pod.status.conditions or [])
    )


@dataclass
class NodeProvisioner:
    cluster: LocalCluster
    delay: float = 5.0
    max_nodes: int = 4
    gpus_per_node: int = 8
    name_prefix: str = "gpu-prov"
    labels: dict[str, str] = field(default_factory=dict)
    namespace: str | None = None  # None: all namespaces
    pod_filter: Callable[[Any], bool] = field(default=lambda pod: _gpu_request(pod) > 0)
    poll_interval: float = 0.5
    cover_timeout: float = 60.0
    scale_down_after: float | None = None
    events: list[ProvisionEvent] = field(default_factory=list)
    removed: list[tuple[float, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._first_seen: dict[str, float] = {}  # pod uid -> monotonic time first seen unschedulable
        self._covered: dict[str, float] = {}  # pod uid -> monotonic time a node was added for it
        self._empty_since: dict[str, float] = {}
        self._seq = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------ lifecycle
    def start(self) -> NodeProvisioner:
        from kubernetes import client

        self._core = client.CoreV1Api(self.cluster.api_client())
        self._thread = threading.Thread(target=self._run, name="node-provisioner", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> NodeProvisioner:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def provisioned_nodes(self) -> list[str]:
        with self._lock:
            gone = {n for _, n in self.removed}
            return [e.node for e in self.events if e.node not in gone]

    # ----------------------------------------------------------------- loop
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.reconcile_once()
            except Exception as e:
                self.errors.append(repr(e))
            self._stop.wait(self.poll_interval)

    def _list_pods(self) -> list[Any]:
        kw = {"field_selector": "status.phase=Pending"}
        if self.namespace:
            return list(self._core.list_namespaced_pod(self.namespace, **kw).items)
        return list(self._core.list_pod_for_all_namespaces(**kw).items)

    def reconcile_once(self) -> list[str]:
        """One pass; returns the names of nodes added."""
        now = time.monotonic()
        pods = [p for p in self._list_pods() if is_unschedulable(p) and self.pod_filter(p)]
        uids = {p.metadata.uid for p in pods}
        for uid in list(self._first_seen):
            if uid not in uids:
                del self._first_seen[uid]
        for uid, t in list(self._covered.items()):
            if uid not in uids or now - t > self.cover_timeout:
                del self._covered[uid]
        for p in pods:
            self._first_seen.setdefault(p.metadata.uid, now)

        due = [
            p for p in pods
            if p.metadata.uid not in self._covered and now - self._first_seen[p.metadata.uid] >= self.delay
        ]
        added: list[str] = []
        if due:
            gpus = sum(max(_gpu_request(p), 1) for p in due)
            want = max(1, math.ceil(gpus / self.gpus_per_node))
            room = self.max_nodes - len(self.provisioned_nodes)
            for _ in range(min(want, room)):
                name = self._next_name()
                self.cluster.add_gpu_node(
                    name, gpus=self.gpus_per_node,
                    labels={"provisioner": self.name_prefix, **self.labels},
                    wait_ready=False,
                )
                added.append(name)
                trigger = [f"{p.metadata.namespace}/{p.metadata.name}" for p in due]
                with self._lock:
                    self.events.append(ProvisionEvent(time.time(), name, trigger))
            if added:
                for p in due:
                    self._covered[p.metadata.uid] = now
        if self.scale_down_after is not None:
            self._scale_down(now)
        return added

    def _next_name(self) -> str:
        existing = {n.metadata.name for n in self._core.list_node().items}
        while True:
            self._seq += 1
            name = f"{self.name_prefix}-{self._seq}"
            if name not in existing:
                return name

    def _scale_down(self, now: float) -> None:
        mine = set(self.provisioned_nodes)
        if not mine:
            return
        busy = {
            p.spec.node_name
            for p in self._core.list_pod_for_all_namespaces(field_selector="status.phase!=Succeeded").items
            if p.spec.node_name in mine and p.status.phase != "Failed"
        }
        for n in mine:
            if n in busy:
                self._empty_since.pop(n, None)
                continue
            since = self._empty_since.setdefault(n, now)
            if now - since >= self.scale_down_after:  # type: ignore[operator]
                self.cluster.delete_node(n)
                self._empty_since.pop(n, None)
                with self._lock:
                    self.removed.append((time.time(), n))
