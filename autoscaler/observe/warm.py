"""Warm slots as the pods show them: placeholder pods (spec.warmCapacity) running now, and the nodes they
held, so a replica that lands on one (the scheduler preempted the placeholder for it) is recognised as a
warm start.

A placeholder pod carries the label `autoscaler.inference.dev/warm-for: <policy>`; nothing else selects it
(it never matches its target's selector). Pure functions of plain pod dicts, as the rest of observe/.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.observe.pods import is_finished, is_terminating
from autoscaler.observe.timefmt import parse_time

Pod = Mapping[str, Any]
WARM_FOR_LABEL = "autoscaler.inference.dev/warm-for"
MAX_LABEL_VALUE = 63


def warm_label_value(policy_name: str) -> str:
    """The policy's name as a label value (at most 63 characters: a long name is cut and given a checksum)."""
    if len(policy_name) <= MAX_LABEL_VALUE:
        return policy_name
    return f"{policy_name[:54].rstrip('-._')}-{zlib.crc32(policy_name.encode()):08x}"


def placeholder_of(pod: Pod) -> str | None:
    """The warm-for label value of a placeholder pod, None for any other pod."""
    value = ((pod.get("metadata") or {}).get("labels") or {}).get(WARM_FOR_LABEL)
    return str(value) if value else None


def running_placeholders(pods: Iterable[Pod]) -> dict[tuple[str, str], int]:
    """Per (namespace, warm-for label value): placeholders that hold their GPUs now (bound, Running, not
    being deleted). One pass over all pods per tick."""
    out: dict[tuple[str, str], int] = {}
    for p in pods:
        value = placeholder_of(p)
        if (value is not None and (p.get("spec") or {}).get("nodeName")
                and (p.get("status") or {}).get("phase") == "Running" and not is_terminating(p)):
            key = ((p.get("metadata") or {}).get("namespace", ""), value)
            out[key] = out.get(key, 0) + 1
    return out


@dataclass(frozen=True, slots=True)
class Presence:
    """A placeholder of the policy was seen on the node from `first` to `last` (controller clock)."""

    first: float
    last: float


class WarmNodes:
    """Per policy (namespace, label value): the nodes its placeholders were seen bound to, and when. A gap of
    more than `gap_seconds` between sightings starts a new presence (the node went cold meanwhile)."""

    def __init__(self, gap_seconds: float = 120.0, forget_seconds: float = 3600.0) -> None:
        self.gap_seconds, self.forget_seconds = gap_seconds, forget_seconds
        self._seen: dict[tuple[str, str], dict[str, Presence]] = {}

    def see(self, pods: Iterable[Pod], now: float) -> None:
        for p in pods:
            value = placeholder_of(p)
            node = (p.get("spec") or {}).get("nodeName")
            if value is None or not node or is_finished(p):
                continue
            per = self._seen.setdefault(((p.get("metadata") or {}).get("namespace", ""), value), {})
            old = per.get(node)
            keep = old is not None and now - old.last <= self.gap_seconds
            per[node] = Presence(old.first if keep and old is not None else now, now)
        for key in list(self._seen):
            per = {n: v for n, v in self._seen[key].items() if now - v.last <= self.forget_seconds}
            if per:
                self._seen[key] = per
            else:
                del self._seen[key]

    def nodes(self, namespace: str, label_value: str) -> Mapping[str, Presence]:
        return self._seen.get((namespace, label_value), {})


def landed_warm(pod: Pod, presence: Mapping[str, Presence], grace_seconds: float) -> bool:
    """Whether a replica pod took a warm slot: it was bound to a node where the policy's placeholder had been
    seen before the replica was scheduled and still was at most `grace_seconds` (about one control interval,
    the time between two sightings) before the replica was created."""
    node = (pod.get("spec") or {}).get("nodeName")
    seen = presence.get(node) if node else None
    if seen is None:
        return False
    meta = pod.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    scheduled = None
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "True":
            scheduled = parse_time(c.get("lastTransitionTime"))
    if created is None:
        return False
    bound_by = scheduled if scheduled is not None else created
    return seen.first <= bound_by + 1.0 and seen.last >= created - grace_seconds
