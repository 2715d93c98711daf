"""Who else scales a target: other policies, HorizontalPodAutoscalers, KEDA ScaledObjects.

Two writers of one replica count fight (8, 4, 8, 4 ...). The first policy (oldest, then by name) owns a
target; any later policy on it, and every policy on a target an HPA or ScaledObject scales, is reported as
a conflict and does not write.

A target is identified by (namespace, API group, kind, name). KServe targets are also identified by the
workload they delegate to (an HPA may name `<isvc>-predictor` directly).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.policy import TargetRef

TargetKey = tuple[str, str, str, str]  # namespace, group, kind, name
_KSERVE = "serving.kserve.io"


def _key(namespace: str, api_version: str, kind: str, name: str) -> TargetKey:
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return namespace, group, kind, name


def target_keys(ref: TargetRef, namespace: str) -> frozenset[TargetKey]:
    keys = {_key(namespace, ref.api_version, ref.kind, ref.name)}
    group = ref.api_version.rpartition("/")[0]
    if group == _KSERVE and ref.kind == "InferenceService":
        keys.add((namespace, "apps", "Deployment", f"{ref.name}-predictor"))
    elif group == _KSERVE and ref.kind == "LLMInferenceService":
        keys.add((namespace, "apps", "Deployment", f"{ref.name}-kserve"))
        keys.add((namespace, "leaderworkerset.x-k8s.io", "LeaderWorkerSet", f"{ref.name}-kserve-mn"))
    return frozenset(keys)


@dataclass(frozen=True)
class OtherAutoscaler:
    kind: str  # HorizontalPodAutoscaler | ScaledObject
    namespace: str
    name: str
    target: TargetKey

    @property
    def description(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def trim_autoscaler(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the controller keeps of an HPA or ScaledObject: its name and the target it scales."""
    meta = obj.get("metadata") or {}
    ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
    if not isinstance(ref, Mapping) or not ref.get("name"):
        return None
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {k: meta.get(k) for k in ("name", "namespace", "uid", "resourceVersion")},
        "spec": {"scaleTargetRef": {k: ref.get(k) for k in ("apiVersion", "kind", "name")}},
    }


def other_autoscalers(objs: Iterable[Mapping[str, Any]]) -> dict[TargetKey, OtherAutoscaler]:
    """HPAs and ScaledObjects by the target they scale (the first one seen per target)."""
    out: dict[TargetKey, OtherAutoscaler] = {}
    for obj in objs:
        meta = obj.get("metadata") or {}
        ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
        kind = str(obj.get("kind") or "HorizontalPodAutoscaler")
        ns = str(meta.get("namespace") or "")
        # KEDA defaults scaleTargetRef to apps/v1 Deployment; an HPA always names both.
        api_version, kind_ = str(ref.get("apiVersion") or "apps/v1"), str(ref.get("kind") or "Deployment")
        target = _key(ns, api_version, kind_, str(ref.get("name")))
        out.setdefault(target, OtherAutoscaler(kind, ns, str(meta.get("name")), target))
    return out


@dataclass(frozen=True)
class Claim:
    """A policy's claim on a target: ordered by creation time, then name."""

    policy_key: str
    created: str
    keys: frozenset[TargetKey]

    @property
    def rank(self) -> tuple[str, str]:
        return self.created, self.policy_key


def owners(claims: Iterable[Claim]) -> dict[TargetKey, Claim]:
    """The owning claim of every claimed target (built once per tick: conflicts are then O(1) each)."""
    out: dict[TargetKey, Claim] = {}
    for c in claims:
        for key in c.keys:
            if key not in out or c.rank < out[key].rank:
                out[key] = c
    return out


def find_conflict(
    claim: Claim, owner_of: Mapping[TargetKey, Claim], autoscalers: Mapping[TargetKey, OtherAutoscaler]
) -> tuple[str, str] | None:
    """(reason, message) when `claim` must not write its target, naming the other owner; else None."""
    for key in sorted(claim.keys):
        other = autoscalers.get(key)
        if other is not None:
            return (
                "Conflict",
                f"{other.description} also scales {other.target[2]} {other.target[3]}; two autoscalers on one "
                f"target fight over its replicas, so this policy does not write it. Delete the {other.kind} "
                "or this policy",
            )
    found = [owner_of[k] for k in claim.keys if k in owner_of]
    owner = min(found, key=lambda c: c.rank, default=claim)
    if owner.policy_key != claim.policy_key:
        return (
            "Conflict",
            f"policy {owner.policy_key} already owns this target (it is older); two policies on one target fight "
            "over its replicas, so this policy does not write it. Delete one of the two",
        )
    return None
