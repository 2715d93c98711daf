"""Cordon and drain with SLO headroom: which of a target's replicas are on leaving nodes, and whether
draining such a node now keeps the SLO.

Pure part (`leaving_view`, `drain_check`, `need_from_status`): the controller's status and the
`drain-check` command call the same functions on what they read. A node is safe to drain when the
ready replicas on nodes that stay (not on this node, nor on any other leaving node) are at least what
the decision needs at the SLO this tick; an unknown need (demand metrics missing, no decision yet) is
never safe. Shell part (`DrainWatch`): per policy, remembers the leaving nodes it reported, so it emits
one event when a node starts leaving and one when its replacements are ready.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from autoscaler.core import Decision
from autoscaler.observe.nodes import leaving_reason
from autoscaler.observe.pods import is_finished, is_ready, is_terminating

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LeavingView:
    """One target's pods against the nodes: replicas on leaving nodes, and ready replicas on nodes that stay."""

    leaving: dict[str, tuple[str, int]]  # node -> (why it is leaving, replicas of the target on it)
    ready_staying: int  # ready replicas on nodes that stay

    @property
    def count(self) -> int:
        return sum(n for _, n in self.leaving.values())


def _node_of(pod: Obj) -> str | None:
    return (pod.get("spec") or {}).get("nodeName") or None


def leaving_view(pods: Iterable[Obj], nodes: Mapping[str, Obj], assume_leaving: str | None = None) -> LeavingView:
    """`nodes` by name. Terminating and finished pods are already going and count nowhere. A pod on a node
    not in `nodes` (deleted, not yet seen) stays. `assume_leaving`: a node to treat as leaving even if it is
    not (yet) cordoned: what `drain-check` asks before the operator cordons it."""
    leaving: dict[str, tuple[str, int]] = {}
    ready_staying = 0
    for pod in pods:
        if is_finished(pod) or is_terminating(pod):
            continue
        name = _node_of(pod)
        node = nodes.get(name) if name else None
        why = leaving_reason(node, pod.get("spec") or {}) if node is not None else None
        if name is not None and name == assume_leaving and why is None:
            why = "not cordoned yet"
        if name is not None and why is not None:
            prev = leaving.get(name)
            leaving[name] = (prev[0] if prev else why, (prev[1] if prev else 0) + 1)
        elif is_ready(pod):
            ready_staying += 1
    return LeavingView(leaving, ready_staying)


@dataclass(frozen=True, slots=True)
class NodeDrain:
    node: str
    leaving: str  # why the node is leaving
    replicas: int  # the target's replicas on it
    needed: int | None  # replicas the SLO needs this tick; None: unknown
    ready_elsewhere: int  # ready replicas on nodes that stay
    replacements_needed: int
    replacements_ready: int
    safe: bool
    reason: str

    def to_status(self) -> dict[str, Any]:
        return {
            "node": self.node, "leaving": self.leaving, "replicas": self.replicas, "needed": self.needed,
            "readyElsewhere": self.ready_elsewhere, "replacementsNeeded": self.replacements_needed,
            "replacementsReady": self.replacements_ready, "safe": self.safe, "reason": self.reason,
        }


def drain_check(node: str, leaving: str, replicas: int, ready_elsewhere: int, needed: int | None) -> NodeDrain:
    """Whether evicting the `replicas` on `node` now keeps the SLO: `ready_elsewhere` >= `needed`.
    Replacements: of the node's replicas, the ones the need still counts on (`replacementsNeeded`), and how
    many of those are covered by ready replicas elsewhere beyond the rest of the need."""
    if needed is None:
        return NodeDrain(node, leaving, replicas, None, ready_elsewhere, replicas, 0, False,
                         "the need at the SLO is unknown (demand metrics missing or no decision yet): "
                         "not confirmed safe")
    needed = max(0, needed)
    rn = min(replicas, needed)
    rr = min(rn, max(0, ready_elsewhere - (needed - rn)))
    if ready_elsewhere >= needed:
        why = (f"{ready_elsewhere} ready replica(s) on nodes that stay >= {needed} needed at the SLO: "
               f"draining {node} keeps the SLO")
        return NodeDrain(node, leaving, replicas, needed, ready_elsewhere, rn, rr, True, why)
    why = (f"only {ready_elsewhere} ready replica(s) on nodes that stay, {needed} needed at the SLO: "
           f"{rr}/{rn} replacement(s) ready; wait for the rest")
    return NodeDrain(node, leaving, replicas, needed, ready_elsewhere, rn, rr, False, why)


def drain_checks(view: LeavingView, needed: int | None) -> list[NodeDrain]:
    return [drain_check(node, why, n, view.ready_staying, needed) for node, (why, n) in sorted(view.leaving.items())]


def need_from_decision(d: Decision) -> int | None:
    """What the decision needs at the SLO this tick: the leaving stage's need, when demand was known."""
    if d.desired_replicas is None or not d.metrics_fresh:
        return None
    need = d.components.get("leaving_need")
    return int(need) if need is not None else d.desired_replicas


def need_from_status(status: Mapping[str, Any] | None) -> int | None:
    """The same need, read back from a policy's status (for `drain-check`): the leaving stage's need when the
    last decision saw leaving replicas; otherwise the recommendation (the largest of its candidates, capped at
    replicas.max) up to the desired count. None when the last decision had no fresh demand."""
    status = status or {}
    last = status.get("lastDecision") or {}
    comps = last.get("components") or {}
    desired = status.get("desiredReplicas")
    if not isinstance(desired, int) or last.get("reason") in ("MetricsMissing", "TargetUnknown"):
        return None
    if any(c.get("type") == "MetricsAvailable" and c.get("status") != "True" for c in status.get("conditions") or ()
           if isinstance(c, dict)):
        return None
    if isinstance(comps.get("leaving_need"), (int, float)):
        return int(comps["leaving_need"])
    candidates = [v for k in ("predictive", "reactive", "concurrency", "floor")
                  if isinstance(v := comps.get(k), (int, float))]
    if not candidates:
        return desired
    raw = int(max(candidates))
    top = comps.get("max")
    if isinstance(top, (int, float)):
        raw = min(raw, int(top))
    return min(desired, raw)


class Recorder(Protocol):
    def record(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None: ...


class DrainWatch:
    """The controller's side: per tick, the node map; per policy, the leaving view its decision used and the
    nodes already announced (for the events)."""

    def __init__(self) -> None:
        self._nodes: tuple[Sequence[Obj] | None, dict[str, Obj]] = (None, {})
        self._views: dict[str, LeavingView] = {}
        self._announced: dict[str, dict[str, bool]] = {}  # policy -> node -> replacements ready announced
        self._lock = threading.Lock()

    def _by_name(self, nodes: Sequence[Obj]) -> dict[str, Obj]:
        with self._lock:
            if self._nodes[0] is not nodes:
                self._nodes = (nodes, {str((n.get("metadata") or {}).get("name")): n for n in nodes})
            return self._nodes[1]

    def leaving(self, key: str, pods: Iterable[Obj], nodes: Sequence[Obj]) -> int:
        """Replicas of this policy's target on leaving nodes (the decision's `ReplicaCounts.leaving`)."""
        view = leaving_view(pods, self._by_name(nodes))
        self._views[key] = view
        return view.count

    def report(self, key: str, raw: dict[str, Any], d: Decision, recorder: Recorder,
               target: str) -> list[dict[str, Any]]:
        """The status entries for this policy's leaving nodes; events when a node starts leaving and when its
        replacements are ready."""
        view = self._views.get(key) or LeavingView({}, 0)
        checks = drain_checks(view, need_from_decision(d))
        seen = self._announced.setdefault(key, {})
        for c in checks:
            if c.node not in seen:
                seen[c.node] = False
                recorder.record(raw, "Normal", "NodeLeaving",
                                f"node {c.node} is leaving ({c.leaving}): {c.replicas} replica(s) of {target} "
                                f"go; replacing them first")
            if c.safe and not seen[c.node]:
                seen[c.node] = True
                recorder.record(raw, "Normal", "ReplacementsReady", f"node {c.node}: {c.reason}")
        for gone in [n for n in seen if n not in view.leaving]:
            del seen[gone]
        return [c.to_status() for c in checks]

    def forget(self, key: str) -> None:
        self._views.pop(key, None)
        self._announced.pop(key, None)
