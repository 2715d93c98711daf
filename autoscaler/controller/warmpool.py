"""Warm capacity in the cluster: per policy with spec.warmCapacity.enabled, a placeholder Deployment
`<target>-warm` in the target's namespace whose pods hold a replica's GPUs at a low PriorityClass.

The placeholder pod copies, from the target's pod template, the containers that request extended resources
(GPUs; the first container if none does) with their resources and images, and the placement: nodeSelector,
tolerations, affinity, schedulerName, runtimeClassName, imagePullSecrets. Each container runs a no-op
command (a shell that sleeps and exits on SIGTERM), so the image is pulled onto the node and the GPUs are
held. With `weightsCachePath`, the first container first downloads the model (`model.name`, with the Hugging
Face hub client the serving image ships, HF_HOME under that path) into a hostPath at that path; the real
replica must mount the same hostPath and read its weights from there (docs/warm-capacity.md). Its
PriorityClass is `priorityClassName` (the chart's has `preemptionPolicy: Never` and a value below the
replicas'), so the scheduler preempts a placeholder when a replica needs its GPUs.

The Deployment is owned by the ModelScalingPolicy (ownerReferences), so deleting the policy deletes it.
Where the template comes from: a Deployment target's own spec.template (one GET, repeated only when the
target's resourceVersion changes); other kinds (KServe, LeaderWorkerSet, ...) from a pod of the target, so
until the target has a pod there is no placeholder (the status says so), and a pod as the informer keeps it
has no affinity, schedulerName, runtimeClassName or imagePullSecrets to copy.

Writes: create, then JSON-patch `spec` (the whole spec when the template changed, else only `replicas`);
nothing when what was last applied is still what is wanted, except that it is asserted again every
REASSERT_SECONDS (a Deployment someone deleted comes back); delete when warm capacity is switched off while
placeholders still run. Dry run writes nothing.
"""

from __future__ import annotations

import json
import logging
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubernetes import client

from autoscaler.observe.warm import WARM_FOR_LABEL, warm_label_value
from autoscaler.policy import API_GROUP, ModelScalingPolicy, WarmCapacitySpec
from autoscaler.targets.api import ApiException, call_json, is_conflict, is_not_found

log = logging.getLogger(__name__)
Obj = dict[str, Any]
TEMPLATE_HASH = "autoscaler.inference.dev/warm-template-hash"
MANAGED_BY = {"app.kubernetes.io/managed-by": "inference-autoscaler", "app.kubernetes.io/component": "warm-slot"}
MAX_NAME = 253
REASSERT_SECONDS = 300.0
# Copied from the target's pod spec as they are (placement and what pulling the image needs).
PLACEMENT = ("nodeSelector", "tolerations", "affinity", "schedulerName", "runtimeClassName", "imagePullSecrets")
# Holds the GPUs and exits at once on SIGTERM (a sleeping PID 1 would otherwise wait out the grace period,
# and the preempting replica with it).
IDLE = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"
PRESTAGE = (
    'python3 -c "import os; from huggingface_hub import snapshot_download; '
    "snapshot_download(os.environ['WARM_MODEL'])\" || echo 'warm slot: weights not pre-staged' >&2; "
)


def placeholder_name(target_name: str) -> str:
    return f"{target_name[: MAX_NAME - 5]}-warm"


def _extended(resources: Mapping[str, Any] | None) -> bool:
    for part in ("requests", "limits"):
        for k in (resources or {}).get(part) or {}:
            if "/" in str(k) and not str(k).startswith("hugepages-"):
                return True
    return False


def placeholder_pod_spec(source: Mapping[str, Any], warm: WarmCapacitySpec, model: str) -> Obj:
    """The placeholder's pod spec from the target's pod spec (see the module docstring)."""
    containers = [c for c in source.get("containers") or () if isinstance(c, Mapping)]
    gpu = [c for c in containers if _extended(c.get("resources"))] or containers[:1]
    if not gpu:
        raise ValueError("the target's pod template has no container")
    out: list[Obj] = []
    volumes: list[Obj] = []
    for i, c in enumerate(gpu):
        image = warm.image or c.get("image")
        if not image:
            raise ValueError(f"container {c.get('name')!r} of the target has no image and warmCapacity.image is unset")
        command = IDLE
        ctr: Obj = {"name": str(c.get("name") or f"slot-{i}"), "image": image, "command": ["/bin/sh", "-c"]}
        if warm.weights_cache_path is not None and i == 0:
            command = PRESTAGE + IDLE
            ctr["env"] = [
                *[e for e in c.get("env") or () if isinstance(e, Mapping) and e.get("name") not in ("HF_HOME",)],
                {"name": "HF_HOME", "value": warm.weights_cache_path},
                {"name": "WARM_MODEL", "value": model},
            ]
            ctr["volumeMounts"] = [{"name": "warm-weights", "mountPath": warm.weights_cache_path}]
            volumes = [{"name": "warm-weights",
                        "hostPath": {"path": warm.weights_cache_path, "type": "DirectoryOrCreate"}}]
        ctr["args"] = [command]
        if c.get("resources"):
            ctr["resources"] = c["resources"]
        out.append(ctr)
    spec: Obj = {k: source[k] for k in PLACEMENT if source.get(k)}
    spec.update(
        containers=out,
        priorityClassName=warm.priority_class_name,
        terminationGracePeriodSeconds=1,
        automountServiceAccountToken=False,
        enableServiceLinks=False,
    )
    if volumes:
        spec["volumes"] = volumes
    return spec


def placeholder_deployment(policy: ModelScalingPolicy, policy_uid: str, target_name: str, pod_spec: Obj,
                           replicas: int) -> Obj:
    """The whole placeholder Deployment (owned by the policy)."""
    labels = {WARM_FOR_LABEL: warm_label_value(policy.metadata.name)}
    template = {"metadata": {"labels": {**labels, **MANAGED_BY}}, "spec": pod_spec}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": placeholder_name(target_name),
            "namespace": policy.metadata.namespace,
            "labels": {**labels, **MANAGED_BY},
            "annotations": {TEMPLATE_HASH: template_hash(template)},
            "ownerReferences": [{
                "apiVersion": f"{API_GROUP}/v1alpha1", "kind": "ModelScalingPolicy", "name": policy.metadata.name,
                "uid": policy_uid, "controller": True, "blockOwnerDeletion": False,
            }],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            # Never more placeholders than asked for (a surge would only sit pending for GPUs).
            "strategy": {"type": "Recreate"},
            "template": template,
        },
    }


def template_hash(template: Mapping[str, Any]) -> str:
    return f"{zlib.crc32(json.dumps(template, sort_keys=True).encode()):08x}"


def pod_spec_from_pods(pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The spec of the newest ready pod of the target (else the newest pod), None without pods."""
    live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    if not live:
        return None

    def rank(p: Mapping[str, Any]) -> tuple[bool, str]:
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (p.get("status") or {}).get("conditions") or ())
        return ready, str((p.get("metadata") or {}).get("creationTimestamp") or "")

    return max(live, key=rank).get("spec") or None


@dataclass(frozen=True, slots=True)
class WarmStatus:
    """What the policy's status says about its warm pool. `gpus_per_slot` (a replica's GPUs; None: unknown)
    gives `gpusHeld`, what the running placeholders cost: GPUs billed like a replica's, serving nothing."""

    desired: int
    running: int
    message: str
    gpus_per_slot: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"desiredSlots": self.desired, "runningSlots": self.running, "message": self.message}
        if self.gpus_per_slot is not None:
            out["gpusHeld"] = self.running * self.gpus_per_slot
        return out


class WarmPool:
    """Keeps each policy's placeholder Deployment as decided. Thread-safe (policies act in parallel)."""

    def __init__(self, apps: client.AppsV1Api):
        self.apps = apps
        # (ns, name) -> ((replicas, template hash, owner uid), when applied)
        self._applied: dict[tuple[str, str], tuple[tuple[int, str, str], float]] = {}
        self._templates: dict[tuple[str, str], tuple[str | None, Obj]] = {}  # target -> (rv, pod spec)
        self._lock = threading.Lock()

    def _deployment_template(self, namespace: str, name: str, resource_version: str | None) -> Mapping[str, Any]:
        key = (namespace, name)
        with self._lock:
            memo = self._templates.get(key)
        if memo is not None and resource_version is not None and memo[0] == resource_version:
            return memo[1]
        dep = call_json(self.apps.read_namespaced_deployment, name, namespace)
        spec = ((dep.get("spec") or {}).get("template") or {}).get("spec") or {}
        with self._lock:
            self._templates[key] = (resource_version, spec)
        return spec

    def sync(self, policy: ModelScalingPolicy, policy_uid: str, target_kind: str, target_name: str,
             target_resource_version: str | None, pods: Sequence[Mapping[str, Any]], replicas: int, running: int,
             dry_run: bool, now: float) -> WarmStatus:
        """Make the placeholder Deployment hold `replicas` slots. Raises ApiException/ValueError (the caller
        reports them as the policy's own failure)."""
        ns, warm = policy.metadata.namespace, policy.spec.warm_capacity
        name = placeholder_name(target_name)
        key = (ns, name)
        gpus = policy.spec.model.gpus_per_replica
        if not warm.enabled:
            return replace(self._disable(key, running, dry_run), gpus_per_slot=gpus)
        if target_kind == "Deployment":
            source: Mapping[str, Any] | None = self._deployment_template(ns, target_name, target_resource_version)
        else:
            source = pod_spec_from_pods(pods)
        if source is None:
            return WarmStatus(replicas, running, f"no placeholder yet: {target_kind} {target_name} has no pod to "
                                                 "copy GPUs and placement from", gpus)
        body = placeholder_deployment(policy, policy_uid, target_name, placeholder_pod_spec(source, warm,
                                                                                              policy.spec.model.name),
                                      replicas)
        wanted = (replicas, body["metadata"]["annotations"][TEMPLATE_HASH], policy_uid)
        with self._lock:
            memo = self._applied.get(key)
        if dry_run:
            return WarmStatus(replicas, running, f"dry run: would keep {replicas} placeholder(s) in Deployment {name}",
                              gpus)
        # What was applied counts for REASSERT_SECONDS, and only for the same policy object: one deleted and
        # created again (a new uid) owns a new Deployment (the old one is garbage-collected).
        fresh = memo is not None and memo[0][2] == policy_uid and 0 <= now - memo[1] < REASSERT_SECONDS
        last = memo[0] if memo is not None and fresh else None
        if last != wanted:
            self._apply(key, body, last, wanted, now)
        return WarmStatus(replicas, running, f"{running}/{replicas} placeholder(s) running in Deployment {name}, "
                                             f"holding {running * gpus} GPU(s)", gpus)

    def _apply(self, key: tuple[str, str], body: Obj, last: tuple[int, str, str] | None,
               wanted: tuple[int, str, str], now: float) -> None:
        ns, name = key
        if last is None:
            try:
                call_json(self.apps.create_namespaced_deployment, ns, body)
                with self._lock:
                    self._applied[key] = (wanted, now)
                return
            except ApiException as e:
                if not is_conflict(e):
                    raise  # 409 AlreadyExists: it is ours from before a restart; patch it below
        if last is not None and last[1] == wanted[1]:
            ops: list[Obj] = [{"op": "replace", "path": "/spec/replicas", "value": wanted[0]}]
        else:
            meta = body["metadata"]
            ops = [{"op": "replace", "path": "/spec", "value": body["spec"]},
                   {"op": "add", "path": "/metadata/labels", "value": meta["labels"]},
                   {"op": "add", "path": "/metadata/annotations", "value": meta["annotations"]},
                   {"op": "add", "path": "/metadata/ownerReferences", "value": meta["ownerReferences"]}]
        try:
            call_json(self.apps.patch_namespaced_deployment, name, ns, ops)
        except ApiException as e:
            if is_not_found(e):  # deleted behind our back: create it again next time
                with self._lock:
                    self._applied.pop(key, None)
            raise
        with self._lock:
            self._applied[key] = (wanted, now)

    def _disable(self, key: tuple[str, str], running: int, dry_run: bool) -> WarmStatus:
        """Warm capacity switched off: delete the placeholders we created or still see running."""
        with self._lock:
            ours = key in self._applied
        if (ours or running) and not dry_run:
            try:
                call_json(self.apps.delete_namespaced_deployment, key[1], key[0])
            except ApiException as e:
                if not is_not_found(e):
                    raise
            with self._lock:
                self._applied.pop(key, None)
            return WarmStatus(0, running, f"warm capacity off: Deployment {key[1]} deleted")
        return WarmStatus(0, running, "warm capacity off")
