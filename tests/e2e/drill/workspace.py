"""One test's corner of the shared cluster: its namespace (watched by the chart's release), its own fake
GPU nodes, and everything it starts, torn down in reverse order (controllers first, nodes last)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubernetes import client

from ..cluster import LocalCluster, NodeProvisioner
from .controller import ControllerProcess
from .history import DeploymentHistory, PolicyHistory
from .load import FollowingEmulator, ReadyPodsFollower
from .manifests import POLICY_GROUP, POLICY_PLURAL, POLICY_VERSION, POOL_LABEL
from .prometheus import Prometheus, emulator_scrape_config
from .release import Release


class Workspace:
    def __init__(self, cluster: LocalCluster, release: Release, namespace: str, workdir: Path) -> None:
        self.cluster, self.release, self.namespace, self.workdir = cluster, release, namespace, workdir
        api = cluster.api_client()
        self.apps = client.AppsV1Api(api)
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self._cleanups: list[Callable[[], None]] = []
        self._nodes: list[str] = []
        self._seq = 0

    def defer(self, fn: Callable[[], None]) -> None:
        self._cleanups.append(fn)

    # -- nodes ---------------------------------------------------------------------------------------
    def add_gpu_nodes(self, count: int, gpus: int) -> list[str]:
        names = []
        for _ in range(count):
            self._seq += 1
            name = f"{self.namespace}-gpu-{self._seq}"
            self._nodes.append(name)
            self.cluster.add_gpu_node(name, gpus=gpus, labels={POOL_LABEL: self.namespace})
            names.append(name)
        return names

    def provisioner(self, delay: float, max_nodes: int, gpus_per_node: int) -> NodeProvisioner:
        """cluster-autoscaler stand-in: adds a `gpus_per_node` node `delay` s after pods turn unschedulable."""
        prov = NodeProvisioner(self.cluster, delay=delay, max_nodes=max_nodes, gpus_per_node=gpus_per_node,
                               name_prefix=f"{self.namespace}-prov", labels={POOL_LABEL: self.namespace},
                               namespace=self.namespace, poll_interval=0.25)
        prov.start()

        def done() -> None:
            prov.stop()
            self._nodes.extend(e.node for e in prov.events)

        self.defer(done)
        return prov

    # -- objects -------------------------------------------------------------------------------------
    def create_deployment(self, body: dict[str, Any]) -> Any:
        return self.apps.create_namespaced_deployment(self.namespace, body)

    def create_policy(self, body: dict[str, Any]) -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.create_namespaced_custom_object(
            POLICY_GROUP, POLICY_VERSION, self.namespace, POLICY_PLURAL, body)
        return obj

    def patch_policy(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.patch_namespaced_custom_object(
            POLICY_GROUP, POLICY_VERSION, self.namespace, POLICY_PLURAL, name, patch)
        return obj

    def policy_status(self, name: str) -> dict[str, Any]:
        obj = self.custom.get_namespaced_custom_object(POLICY_GROUP, POLICY_VERSION, self.namespace,
                                                       POLICY_PLURAL, name)
        status: dict[str, Any] = obj.get("status") or {}
        return status

    def replicas(self, deployment: str) -> int:
        return int(self.apps.read_namespaced_deployment(deployment, self.namespace).spec.replicas)

    def ready_pods(self, app: str) -> int:
        pods = self.core.list_namespaced_pod(self.namespace, label_selector=f"app={app}").items
        return sum(1 for p in pods if p.metadata.deletion_timestamp is None and any(
            c.type == "Ready" and c.status == "True" for c in (p.status.conditions or [])))

    def wait_ready(self, app: str, n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.ready_pods(app) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"{n} ready pods of {self.namespace}/{app} not reached in {timeout:.0f}s")
            time.sleep(0.25)

    # -- processes -----------------------------------------------------------------------------------
    def controller(self, name: str, *overrides: str, start: bool = True, lease: str | None = None,
                   prometheus_url: str | None = None, kubeconfig: Path | None = None) -> ControllerProcess:
        """`inference-autoscaler run` with the chart's arguments, as the chart's ServiceAccount, watching
        only this namespace, electing on its own Lease."""
        extra = [f"--namespaces={self.namespace}", f"--lease-name={lease or self.namespace}"]
        if prometheus_url:
            extra.append(f"--prometheus-url={prometheus_url}")
        proc = ControllerProcess(self.release.controller_args, kubeconfig or self.release.kubeconfig, self.workdir,
                                 name, [*extra, *overrides])
        self.defer(proc.stop)
        if start:
            proc.start()
        return proc

    def emulator(self, trace: Any, app: str, model: str) -> FollowingEmulator:
        follower = ReadyPodsFollower(self.core, self.namespace, f"app={app}")
        emu = FollowingEmulator(trace, follower, model=model, namespace=self.namespace)
        self.defer(emu.stop)
        return emu

    def prometheus(self, emulator: FollowingEmulator) -> Prometheus:
        prom = Prometheus(emulator_scrape_config(emulator.url), self.workdir / "prometheus")
        self.defer(prom.stop)
        prom.start()
        return prom

    def deployment_history(self, name: str) -> DeploymentHistory:
        h = DeploymentHistory(self.apps, self.namespace, name)
        self.defer(h.stop)
        h.start()
        return h

    def policy_history(self, name: str) -> PolicyHistory:
        h = PolicyHistory(self.custom, self.namespace, name)
        self.defer(h.stop)
        h.start()
        return h

    # -- teardown ------------------------------------------------------------------------------------
    def close(self) -> None:
        while self._cleanups:
            with contextlib.suppress(Exception):
                self._cleanups.pop()()
        self._delete_namespaced_objects()
        for n in self._nodes:
            self.cluster.delete_node(n)

    def _delete_namespaced_objects(self) -> None:
        ns = self.namespace
        with contextlib.suppress(Exception):
            self.custom.delete_collection_namespaced_custom_object(POLICY_GROUP, POLICY_VERSION, ns, POLICY_PLURAL)
        with contextlib.suppress(Exception):
            self.custom.delete_collection_namespaced_custom_object("serving.kserve.io", "v1beta1", ns,
                                                                   "inferenceservices")
        with contextlib.suppress(Exception):
            self.apps.delete_collection_namespaced_deployment(ns, propagation_policy="Background")
        with contextlib.suppress(Exception):
            self.core.delete_collection_namespaced_event(ns)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                if not self.core.list_namespaced_pod(ns).items:
                    break
            time.sleep(0.5)


def names(objs: Sequence[Any]) -> list[str]:
    return [o.metadata.name for o in objs]
