"""What happened, as the API server saw it: the target's spec.replicas/generation over time, the
policy's status over time, and the controller's Events. Polled (not watched) so a restarted API server
costs a gap, never a wrong count: every write to a Deployment's spec bumps metadata.generation.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from ..cluster.cluster import wait_until
from .manifests import POLICY_GROUP, POLICY_PLURAL, POLICY_VERSION


@dataclass(frozen=True)
class ReplicasChange:
    at: float  # time.time() when first seen
    generation: int
    replicas: int
    ready: int


@dataclass(frozen=True)
class StatusSample:
    at: float
    desired: int | None
    current: int | None
    ready: int | None
    reason: str | None
    message: str | None
    applied: bool | None
    metrics_available: str | None  # "True"/"False"
    metrics_reason: str | None


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


class _Poller:
    def __init__(self, poll_seconds: float) -> None:
        self.poll_seconds = poll_seconds
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0

    def poll(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception:
                self.errors += 1
            self._stop.wait(self.poll_seconds)

    def start(self) -> _Poller:
        with contextlib.suppress(Exception):
            self.poll()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class DeploymentHistory(_Poller):
    def __init__(self, apps: client.AppsV1Api, namespace: str, name: str, poll_seconds: float = 0.2) -> None:
        super().__init__(poll_seconds)
        self.apps, self.namespace, self.name = apps, namespace, name
        self.changes: list[ReplicasChange] = []
        self._lock = threading.Lock()

    def poll(self) -> None:
        d = self.apps.read_namespaced_deployment(self.name, self.namespace, _request_timeout=3)
        gen, replicas = int(d.metadata.generation), int(d.spec.replicas)
        ready = int(d.status.ready_replicas or 0)
        with self._lock:
            last = self.changes[-1] if self.changes else None
            if last is None or (gen, replicas, ready) != (last.generation, last.replicas, last.ready):
                self.changes.append(ReplicasChange(time.time(), gen, replicas, ready))

    def spec_changes(self) -> list[ReplicasChange]:
        """Only the changes of spec (generation), first sighting of each."""
        out: list[ReplicasChange] = []
        for c in list(self.changes):
            if not out or c.generation != out[-1].generation:
                out.append(c)
        return out

    def replicas_series(self) -> list[tuple[float, int]]:
        return [(c.at, c.replicas) for c in self.spec_changes()]


class PolicyHistory(_Poller):
    def __init__(self, custom: client.CustomObjectsApi, namespace: str, name: str, poll_seconds: float = 0.5) -> None:
        super().__init__(poll_seconds)
        self.custom, self.namespace, self.name = custom, namespace, name
        self.samples: list[StatusSample] = []
        self.last_status: dict[str, Any] = {}

    def read(self) -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.get_namespaced_custom_object(
            POLICY_GROUP, POLICY_VERSION, self.namespace, POLICY_PLURAL, self.name, _request_timeout=3)
        return obj

    def poll(self) -> None:
        status = self.read().get("status") or {}
        self.last_status = status
        last = status.get("lastDecision") or {}
        m = condition(status, "MetricsAvailable") or {}
        s = StatusSample(time.time(), status.get("desiredReplicas"), status.get("currentReplicas"),
                         status.get("readyReplicas"), last.get("reason"), last.get("message"), last.get("applied"),
                         m.get("status"), m.get("reason"))
        prev = self.samples[-1] if self.samples else None
        if prev is None or (s.desired, s.current, s.ready, s.reason, s.metrics_available, s.metrics_reason) != (
            prev.desired, prev.current, prev.ready, prev.reason, prev.metrics_available, prev.metrics_reason
        ):
            self.samples.append(s)

    def reasons(self) -> list[str]:
        return [s.reason for s in self.samples if s.reason]


def controller_events(core: client.CoreV1Api, namespace: str, policy: str) -> list[Any]:
    """Events the controller recorded on the policy, oldest first."""
    evs = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={policy}").items
    evs = [e for e in evs if (e.involved_object.kind == "ModelScalingPolicy")]
    return sorted(evs, key=lambda e: (e.first_timestamp or e.event_time or e.metadata.creation_timestamp))


def wait_for(fn: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """The cluster's `wait_until`, failing as a test assertion rather than an error."""
    try:
        return wait_until(fn, timeout, interval, what)
    except TimeoutError as e:
        raise AssertionError(str(e)) from None
