"""Per-pod series for the drill: the emulator's replicas carry the KWOK pods' names as their `pod` label, and
a watcher records what happened to each pod (the annotations it carried, when it started terminating)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import watch

from .load import FollowingEmulator


def name_replicas(emu: FollowingEmulator, names: Mapping[int, str]) -> None:
    """The emulator's service discovery gives replica `id` the `pod` label `names[id]` (its KWOK pod), so a
    `sum by (pod)` query answers per pod as it would for real vLLM pods scraped by a Kubernetes SD config."""
    server = emu.server
    original = server.targets

    def targets(snap: Any = None) -> list[dict[str, Any]]:
        groups = original(snap)
        for g in groups:
            path = g["labels"]["__metrics_path__"]
            if not path.startswith("/replica/"):
                continue  # the emulator's gateway: no pod
            rid = int(path.split("/")[2])
            if rid in names:
                g["labels"]["pod"] = names[rid]
        return groups

    server.targets = targets  # type: ignore[method-assign]


@dataclass
class PodRecord:
    annotations: dict[str, str] = field(default_factory=dict)  # every annotation it carried (merged over events)
    terminating_at: float | None = None
    created: str = ""


class PodWatcher:
    """Watches the namespace's pods of `selector` (a watch, so no update is missed between polls: the
    ReplicaSet deletes a pod milliseconds after the annotation patch, and a KWOK pod is gone a second later)."""

    def __init__(self, core: Any, namespace: str, selector: str) -> None:
        self.core, self.namespace, self.selector = core, namespace, selector
        self.pods: dict[str, PodRecord] = {}
        self._lock = threading.Lock()
        self._watch = watch.Watch()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-watcher", daemon=True)

    def _record(self, pod: Any, deleted: bool = False) -> None:
        with self._lock:
            name = pod.metadata.name
            rec = self.pods.setdefault(name, PodRecord(created=str(pod.metadata.creation_timestamp)))
            rec.annotations.update(pod.metadata.annotations or {})
            if (deleted or pod.metadata.deletion_timestamp is not None) and rec.terminating_at is None:
                rec.terminating_at = time.time()

    def poll(self) -> None:
        """One list (the watch's starting point, and a final check)."""
        with contextlib.suppress(Exception):
            for p in self.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                   _request_timeout=3).items:
                self._record(p)

    def start(self) -> PodWatcher:
        self.poll()
        self._thread.start()
        return self

    def _run(self) -> None:
        rv: str | None = None  # resume where the last stream ended (a restart must not skip events)
        while not self._stop.is_set():
            try:
                kw = {"resource_version": rv} if rv else {}
                for ev in self._watch.stream(self.core.list_namespaced_pod, self.namespace,
                                             label_selector=self.selector, timeout_seconds=30,
                                             _request_timeout=35, **kw):
                    self._record(ev["object"], deleted=ev["type"] == "DELETED")
                    rv = ev["object"].metadata.resource_version
                    if self._stop.is_set():
                        break
            except Exception:
                rv = None  # e.g. 410 Gone: start over from a fresh list (ADDED for every pod)
            self._stop.wait(0.2)

    def stop(self) -> None:
        self._stop.set()
        self._watch.stop()
        self._thread.join(timeout=5)

    def terminated(self) -> list[str]:
        with self._lock:
            return sorted(n for n, r in self.pods.items() if r.terminating_at is not None)
