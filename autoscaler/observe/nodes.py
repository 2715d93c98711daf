"""Cluster facts for a new replica: free GPU slots on nodes it fits, and whether its image is cached.

A node fits when it is Ready, schedulable, carries the pod's nodeSelector labels and its NoSchedule /
NoExecute taints are tolerated (affinity is not evaluated). Free slots are counted per node
(`sum(free_gpus_on_node // gpusPerReplica)`): a replica's GPUs must be on one node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from autoscaler.core.signals import ClusterFacts
from autoscaler.observe.pods import is_finished

GPU = "nvidia.com/gpu"


def _qty(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def pod_gpus(pod: Mapping[str, Any]) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or ():
        res = c.get("resources") or {}
        total += _qty((res.get("requests") or {}).get(GPU, (res.get("limits") or {}).get(GPU, 0)))
    return total


def gpu_usage_by_node(pods: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """GPUs requested on each node by pods bound to it and not finished."""
    used: dict[str, int] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node and not is_finished(p):
            g = pod_gpus(p)
            if g:
                used[node] = used.get(node, 0) + g
    return used


def _tolerates(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def fits(node: Mapping[str, Any], pod_spec: Mapping[str, Any]) -> bool:
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return False
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )
    if not ready:
        return False
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    tolerations = pod_spec.get("tolerations") or []
    return all(
        _tolerates(tolerations, taint)
        for taint in spec.get("taints") or ()
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def _has_image(node: Mapping[str, Any], image: str) -> bool:
    for entry in (node.get("status") or {}).get("images") or ():
        for name in entry.get("names") or ():
            if name == image or name.endswith("/" + image):
                return True
    return False


def cluster_facts(
    template: Mapping[str, Any] | None,
    nodes: Iterable[Mapping[str, Any]],
    gpus_used: Mapping[str, int],
    gpus_per_replica: int,
) -> ClusterFacts:
    """`template` is one of the target's pods (its spec tells where a new one could go); without one
    both facts are unknown. With no free slot, the image counts as cached only if every fitting node
    has it (node images often bake it in; a new node is then likely to have it too)."""
    if template is None:
        return ClusterFacts()
    spec = template.get("spec") or {}
    containers = spec.get("containers") or ()
    image = containers[0].get("image") if containers else None
    fitting = [n for n in nodes if fits(n, spec)]
    slots, free_nodes = 0, []
    for n in fitting:
        name = (n.get("metadata") or {}).get("name", "")
        free = _qty(((n.get("status") or {}).get("allocatable") or {}).get(GPU, 0)) - gpus_used.get(name, 0)
        if free >= gpus_per_replica:
            slots += free // gpus_per_replica
            free_nodes.append(n)
    cached: bool | None = None
    if image:
        if free_nodes:
            cached = any(_has_image(n, image) for n in free_nodes)
        elif fitting:
            cached = all(_has_image(n, image) for n in fitting)
    return ClusterFacts(free_replica_slots=slots, image_cached=cached)


# -- leaving nodes (cordon / drain) ---------------------------------------------------------------------
# A node is leaving for a pod when the pod will be evicted from it or must not be placed there again:
# the node is cordoned (spec.unschedulable; `kubectl cordon` also adds node.kubernetes.io/unschedulable),
# or it carries a NoSchedule/NoExecute taint the pod does not tolerate. A taint the pod tolerates (the GPU
# taint the replica pods carry a toleration for) does not make it leave, except a NoExecute toleration with
# tolerationSeconds: the pod is tolerated only that long, then evicted (the node lifecycle controller's
# not-ready/unreachable taints, tolerated 300 s by default, are the common case).
_LEAVING_EFFECTS = ("NoSchedule", "NoExecute")


def _matches(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Kubernetes' ToleratesTaint: an empty effect matches every effect; operator Exists with an empty key
    matches every taint; Equal (the default) needs the same key and value."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def _tolerated_for_good(tolerations: list[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    matching = [t for t in tolerations if _matches(t, taint)]
    if not matching:
        return False
    if taint.get("effect") != "NoExecute":
        return True
    return any(t.get("tolerationSeconds") is None for t in matching)


def leaving_reason(node: Mapping[str, Any], pod_spec: Mapping[str, Any]) -> str | None:
    """Why a pod with this spec is leaving this node, or None when it is staying."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return "cordoned"
    tolerations = list(pod_spec.get("tolerations") or ())
    for taint in spec.get("taints") or ():
        if taint.get("effect") in _LEAVING_EFFECTS and not _tolerated_for_good(tolerations, taint):
            value = f"={taint.get('value')}" if taint.get("value") else ""
            return f"taint {taint.get('key')}{value}:{taint.get('effect')}"
    return None
