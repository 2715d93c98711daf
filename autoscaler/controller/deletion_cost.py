"""Before a write that lowers replicas: mark the target's pods with `controller.kubernetes.io/pod-deletion-cost`
so the ReplicaSet removes the ones with the fewest in-flight requests (victim choice: `autoscaler.core.victims`;
why and what it cannot do: docs/scale-down.md).

Best effort by construction: a failed pod PATCH is logged and counted, the scale-down goes ahead and the
policy is not failed; no cost is set when the decision's metrics are not fresh, when no pod's in-flight count
is known, or when the target's pods are not removed by a ReplicaSet (then the status says so). Only pods of
the target, as selected from the watched namespaces' pod cache, are ever patched; a pod whose annotation
already has the wanted value is not patched again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client
from prometheus_client import CollectorRegistry, Counter

from autoscaler.controller.telemetry import PREFIX
from autoscaler.core.victims import ANNOTATION, PodLoad, deletion_costs, replicaset_victims
from autoscaler.observe.pods import is_finished, is_ready, is_terminating
from autoscaler.observe.timefmt import format_time, parse_time
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.per_pod import pod_inflight
from autoscaler.targets.api import API_ERRORS, ApiException, call_json
from autoscaler.targets.kserve import InferenceServiceTarget, LLMInferenceServiceTarget
from autoscaler.targets.scale import CustomScale, DeploymentScale

log = logging.getLogger(__name__)
Obj = dict[str, Any]
PATCH_BUDGET_SECONDS = 5.0  # all patches of one scale-down; the rest are skipped (counted), never waited for

# Workload kinds whose pods a ReplicaSet removes (the only controller that reads the annotation).
SUPPORTED_KINDS = frozenset({"Deployment", "ReplicaSet"})
WHY_UNSUPPORTED: dict[str, str] = {
    "LeaderWorkerSet": "a LeaderWorkerSet removes whole groups by index, not by pod deletion cost",
    "StatefulSet": "a StatefulSet removes the highest ordinal, not by pod deletion cost",
}


def workload_kind(target: object) -> str:
    """The kind of the workload whose replicas the target writes (what removes the pods)."""
    if isinstance(target, DeploymentScale):
        return "Deployment"
    if isinstance(target, InferenceServiceTarget):  # Standard mode: its predictor Deployment (Knative is blocked)
        return "Deployment"
    if isinstance(target, LLMInferenceServiceTarget):
        inner = target._workload
        return workload_kind(inner) if inner is not None else "LLMInferenceService"
    if isinstance(target, CustomScale):
        return target.description.split(" ", 1)[0]
    return str(getattr(target, "description", type(target).__name__)).split(" ", 1)[0]


def unsupported(target: object) -> str | None:
    """None when deletion cost steers the target's scale-down, else the status message saying why not."""
    kind = workload_kind(target)
    if kind in SUPPORTED_KINDS:
        return None
    why = WHY_UNSUPPORTED.get(kind, "its pods are not removed by a ReplicaSet")
    return f"deletionCost: unsupported for {kind} ({why})"


def pod_loads(pods: Sequence[Mapping[str, Any]], inflight: Mapping[str, float | None]) -> list[PodLoad]:
    """Each pod's load as the victim ranking reads it, with the target's pods per node (warm placeholders are
    not visible here: a node they share counts as the target's alone, which only makes the choice more
    conservative)."""
    per_node: dict[str, int] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node:
            per_node[str(node)] = per_node.get(str(node), 0) + 1
    return [_pod_load(p, inflight.get(str((p.get("metadata") or {}).get("name"))), per_node) for p in pods]


def _pod_load(pod: Mapping[str, Any], inflight: float | None, per_node: Mapping[str, int] | None = None) -> PodLoad:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    node = spec.get("nodeName")
    ready_since = None
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            ready_since = parse_time(c.get("lastTransitionTime"))
    return PodLoad(
        name=str(meta.get("name")),
        ready=is_ready(pod),
        inflight=inflight,
        assigned=bool(spec.get("nodeName")),
        ready_since=ready_since,
        created=parse_time(meta.get("creationTimestamp")) or 0.0,
        node_shared=None if per_node is None or not node else per_node.get(str(node), 0) > 1,
    )


class DeletionCoster:
    """Sets deletion costs before a scale-down. `source`: the controller's metric source (per-pod reads)."""

    def __init__(self, api_client: client.ApiClient, source: object, registry: CollectorRegistry | None = None):
        self.core = client.CoreV1Api(api_client)
        self.source = source
        self.patches = Counter(
            f"{PREFIX}_deletion_cost_patches",
            "Pod deletion-cost annotation patches before a scale-down, by result",
            ("result",),
            registry=registry,
        )

    def before_write(
        self,
        policy: ModelScalingPolicy,
        target: object,
        pods: Sequence[Mapping[str, Any]],
        current: int,
        desired: int | None,
        metrics_fresh: bool,
        writing: bool,
        now: float,
    ) -> Obj | None:
        """The one call the reconciler makes per decision. Returns the `status.deletionCost` to record, or None
        to leave it as it is (no scale-down now). Never raises: whatever goes wrong here, the scale-down goes
        ahead without costs and the status says why."""
        try:
            spec = policy.spec.scale_down
            why = unsupported(target) if spec.deletion_cost else None
            if why is not None:  # said on every decision (no time stamp: an unchanged status is not rewritten)
                return self._status("Unsupported", why, None)
            if desired is None or desired >= current or not writing:
                return None
            if not spec.deletion_cost:
                return self._status("Disabled", "deletionCost: disabled by spec.scaleDown.deletionCost", now)
            if not metrics_fresh:
                return self._status(
                    "Skipped", "deletionCost: not set: the decision's metrics are not fresh, so the ReplicaSet "
                    "chooses the victims by its default ranking", now)
            active = [p for p in pods if not is_terminating(p) and not is_finished(p)]
            remove = len(active) - desired
            if remove <= 0 or remove >= len(active):
                return self._status("NotNeeded", f"deletionCost: not needed: {len(active)} pods, {desired} stay", now)
            names = {str((p.get("metadata") or {}).get("name")): (p.get("status") or {}).get("podIP") for p in active}
            inflight = pod_inflight(self.source, policy, names, now, policy.spec.metrics.staleness_seconds)
            loads = pod_loads(active, inflight)
            if not any(p.inflight is not None for p in loads if p.ready):
                return self._status(
                    "Skipped", "deletionCost: not set: no ready pod's in-flight requests are known "
                    "(per-pod metrics missing or stale)", now)
            costs = deletion_costs(loads, remove, keep_nodes_warm=policy.spec.warm_capacity.enabled)
            patched, failed, skipped = self._apply(policy.metadata.namespace, active, costs)
            victims = replicaset_victims(loads, remove, costs)
            shown = ", ".join(f"{v} ({_fmt(inflight.get(v))})" for v in victims[:5])
            msg = (f"deletionCost: set for {current} -> {desired}: the ReplicaSet removes {shown}"
                   f"{' …' if len(victims) > 5 else ''} (in flight); {patched} pods patched")
            if failed or skipped:
                msg += f", {failed} patches failed, {skipped} skipped (over the time budget)"
            out = self._status("Set" if not failed and not skipped else "Partial", msg, now)
            out["victims"] = victims[:20]
            return out
        except Exception as e:
            self.patches.labels(result="failed").inc()
            log.warning("deletion cost for %s failed: %s: %s", policy.key, type(e).__name__, e)
            return self._status("Failed", f"deletionCost: not set: {type(e).__name__}: {str(e)[:200]}", now)

    def _apply(
        self, namespace: str, pods: Sequence[Mapping[str, Any]], costs: Mapping[str, int]
    ) -> tuple[int, int, int]:
        """Patch the annotation where it differs. Returns (patched, failed, skipped)."""
        patched = failed = skipped = 0
        deadline = time.monotonic() + PATCH_BUDGET_SECONDS
        for pod in pods:
            meta = pod.get("metadata") or {}
            name = str(meta.get("name"))
            if name not in costs or meta.get("namespace", namespace) != namespace:
                continue
            value = str(costs[name])
            if (meta.get("annotations") or {}).get(ANNOTATION) == value:
                continue
            if time.monotonic() > deadline:
                skipped += 1
                self.patches.labels(result="skipped").inc()
                continue
            try:
                body = {"metadata": {"annotations": {ANNOTATION: value}}}
                call_json(self.core.patch_namespaced_pod, name, namespace, body)
                patched += 1
                self.patches.labels(result="ok").inc()
            except API_ERRORS as e:
                failed += 1
                self.patches.labels(result="failed").inc()
                code = e.status if isinstance(e, ApiException) else type(e).__name__
                log.warning("could not set %s on pod %s/%s: %s", ANNOTATION, namespace, name, code)
        return patched, failed, skipped

    @staticmethod
    def _status(state: str, message: str, now: float | None) -> Obj:
        out: Obj = {"state": state, "message": message}
        if now is not None:
            out["time"] = format_time(now)
        return out


def _fmt(x: float | None) -> str:
    return "unknown" if x is None else f"{x:g}"
