"""Turn pods' completed stages into `StageObservation`s, each reported once.

In memory, (pod UID, stage) pairs already reported are remembered. Across restarts, a per-policy
watermark (the latest completion time reported, persisted by the controller in the policy's status)
keeps stages that completed before the restart from being counted twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.core.signals import StageObservation
from autoscaler.observe.pods import completed_stages, is_ready, is_unschedulable, main_started_at
from autoscaler.observe.timefmt import parse_time
from autoscaler.observe.warm import Presence, landed_warm


class ColdStartObserver:
    def __init__(self) -> None:
        self._reported: dict[str, set[str]] = {}
        self._unschedulable: set[str] = set()
        self._watermarks: dict[str, float] = {}
        self._first_started: dict[str, float] = {}

    def note_pod(self, pod: Mapping[str, Any]) -> None:
        """Call for every pod update seen (informer handler; `observe` calls it too): remembers pods that were
        ever unschedulable, which a later `PodScheduled=True` no longer shows, and when a not-yet-ready pod's
        main containers were first seen running, which a restart overwrites."""
        uid = (pod.get("metadata") or {}).get("uid")
        if not uid:
            return
        if is_unschedulable(pod):
            self._unschedulable.add(uid)
        started = main_started_at(pod)
        if started is not None and not is_ready(pod) and started < self._first_started.get(uid, math.inf):
            self._first_started[uid] = started

    def restore_watermark(self, key: str, value: float | None) -> None:
        if value is not None and key not in self._watermarks:
            self._watermarks[key] = float(value)

    def watermark(self, key: str) -> float | None:
        return self._watermarks.get(key)

    def observe(
        self,
        key: str,
        pods: Iterable[Mapping[str, Any]],
        events_by_pod: Mapping[str, list[Mapping[str, Any]]],
        node_created: Mapping[str, float],
        warm_nodes: Mapping[str, Presence] | None = None,
        warm_grace_seconds: float = 60.0,
        node_ready: Mapping[str, float] | None = None,
    ) -> tuple[StageObservation, ...]:
        """New completed stages of `pods` (the target's pods) since the last call. `warm_nodes`: where the
        policy's placeholders were seen (observe/warm.py); a pod that took one reports its stages as "warm".
        `node_created` / `node_ready`: nodes' creation and last Ready times (`node_creation_times`,
        `node_ready_times`), which decide a pod's node stage (observe/pods.py)."""
        mark = self._watermarks.get(key)
        newest = mark
        out: list[StageObservation] = []
        for pod in pods:
            meta = pod.get("metadata") or {}
            uid = meta.get("uid")
            if not uid:
                continue
            self.note_pod(pod)
            node = (pod.get("spec") or {}).get("nodeName")
            done = self._reported.setdefault(uid, set())
            for c in completed_stages(
                pod,
                events_by_pod.get(uid, ()),
                node_created.get(node) if node else None,
                uid in self._unschedulable,
                bool(warm_nodes) and landed_warm(pod, warm_nodes or {}, warm_grace_seconds),
                (node_ready or {}).get(node) if node else None,
                self._first_started.get(uid),
            ):
                if c.stage in done:
                    continue
                done.add(c.stage)
                if mark is not None and c.completed_at <= mark:
                    continue  # reported before a restart
                out.append(StageObservation(c.stage, c.seconds, c.situation))
                newest = c.completed_at if newest is None else max(newest, c.completed_at)
        if newest is not None:
            self._watermarks[key] = newest
        return tuple(out)

    def forget_except(self, live_uids: set[str]) -> None:
        """Drop memory of pods that no longer exist."""
        for uid in [u for u in self._reported if u not in live_uids]:
            del self._reported[uid]
        self._unschedulable &= live_uids
        for uid in [u for u in self._first_started if u not in live_uids]:
            del self._first_started[uid]


def node_creation_times(nodes: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    out = {}
    for n in nodes:
        meta = n.get("metadata") or {}
        t = parse_time(meta.get("creationTimestamp"))
        if t is not None and meta.get("name"):
            out[meta["name"]] = t
    return out


def node_ready_times(nodes: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """When each Ready node last became Ready (its `Ready` condition's lastTransitionTime)."""
    out = {}
    for n in nodes:
        name = (n.get("metadata") or {}).get("name")
        for c in (n.get("status") or {}).get("conditions") or ():
            if c.get("type") == "Ready" and c.get("status") == "True":
                t = parse_time(c.get("lastTransitionTime"))
                if t is not None and name:
                    out[name] = t
    return out


def events_by_pod_uid(events: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for e in events:
        obj = e.get("involvedObject") or e.get("regarding") or {}
        uid = obj.get("uid")
        if uid and obj.get("kind", "Pod") == "Pod":
            out.setdefault(uid, []).append(e)
    return out
