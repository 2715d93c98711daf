"""Per-pod series for the drill: the emulator's replicas carry the KWOK pods' names as their `pod` label, and
a watcher records what happened to each pod (the annotations it carried, when it started terminating)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .load import FollowingEmulator


def name_replicas(emu: FollowingEmulator, names: Mapping[int, str]) -> None:
    """The emulator's service discovery gives replica `id` the `pod` label `names[id]` (its KWOK pod), so a
    `sum by (pod)` query answers per pod as it would for real vLLM pods scraped by a Kubernetes SD config."""
    server = emu.server
    original = server.targets

    def targets(snap: Any = None) -> list[dict[str, Any]]:
        groups = original(snap)
        for g in groups:
            rid = int(g["labels"]["__metrics_path__"].split("/")[2])
            if rid in names:
                g["labels"]["pod"] = names[rid]
        return groups

    server.targets = targets  # type: ignore[method-assign]


@dataclass
class PodRecord:
    annotations: dict[str, str] = field(default_factory=dict)  # as last seen before it started terminating
    terminating_at: float | None = None
    created: str = ""


class PodWatcher:
    """Polls the namespace's pods of `selector` every `poll_seconds` (a list, not a watch: simple and enough)."""

    def __init__(self, core: Any, namespace: str, selector: str, poll_seconds: float = 0.2) -> None:
        self.core, self.namespace, self.selector, self.poll_seconds = core, namespace, selector, poll_seconds
        self.pods: dict[str, PodRecord] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pod-watcher", daemon=True)

    def poll(self) -> None:
        with contextlib.suppress(Exception):
            items = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                  _request_timeout=3).items
            now = time.time()
            seen = set()
            for p in items:
                name = p.metadata.name
                seen.add(name)
                rec = self.pods.setdefault(name, PodRecord(created=str(p.metadata.creation_timestamp)))
                if p.metadata.deletion_timestamp is not None:
                    if rec.terminating_at is None:
                        rec.terminating_at = now
                else:
                    rec.annotations = dict(p.metadata.annotations or {})
            for name, rec in self.pods.items():
                if name not in seen and rec.terminating_at is None:
                    rec.terminating_at = now  # gone between two polls

    def start(self) -> PodWatcher:
        self.poll()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            self.poll()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def terminated(self) -> list[str]:
        return sorted(n for n, r in self.pods.items() if r.terminating_at is not None)
