"""KServe targets. Neither InferenceService nor LLMInferenceService serves `/scale`; each delegates to the
workload KServe creates for it, and only where KServe will not revert an outside change.

InferenceService (Standard/RawDeployment mode), by `serving.kserve.io/autoscalerClass`:
- `external`: KServe ignores the Deployment's replicas, so scale `<isvc>-predictor` through `/scale`.
- `none`: KServe sets the Deployment's replicas from `spec.predictor.minReplicas` and resets any direct
  change, so patch `minReplicas` (and raise `maxReplicas` if it is set and lower).
- `hpa` (the default), `keda`, and Knative mode: another autoscaler owns replicas. We never fight it:
  the reading is returned as blocked, with the annotation to change.
LLMInferenceService: with `spec.replicas` and `spec.scaling` unset, KServe preserves the replicas of its
`<name>-kserve` Deployment (or `<name>-kserve-mn` LeaderWorkerSet when `spec.worker` is set), so scale
that through `/scale`. Child names longer than 63 characters (hashed by KServe) are not derived here.
Sources (KServe's code, by file and commit): docs/kubernetes-targets.md.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kubernetes import client

from autoscaler.targets.api import ApiException, call_json, is_not_found
from autoscaler.targets.base import ScaleReading, TargetBlocked, TargetNotFound
from autoscaler.targets.reads import DirectReads, Reads
from autoscaler.targets.scale import CustomScale, DeploymentScale

GROUP = "serving.kserve.io"
MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
CLASS_ANNOTATION = "serving.kserve.io/autoscalerClass"
_MODE_ALIASES = {"RawDeployment": "Standard", "Serverless": "Knative"}


def _get(
    reads: Reads, version: str, namespace: str, plural: str, name: str, what: str, fresh: bool = False
) -> dict[str, Any]:
    try:
        return reads.object(GROUP, version, plural, namespace, name, fresh=fresh)
    except ApiException as e:
        if is_not_found(e):
            raise TargetNotFound(f"{what} {name} not found in namespace {namespace}") from None
        raise


class InferenceServiceTarget:
    def __init__(
        self,
        custom: client.CustomObjectsApi,
        apps: client.AppsV1Api,
        namespace: str,
        name: str,
        version: str = "v1beta1",
        reads: Reads | None = None,
    ):
        self.custom, self.namespace, self.name, self.version = custom, namespace, name, version
        self.reads: Reads = reads if reads is not None else DirectReads(apps, custom)
        self.predictor = DeploymentScale(apps, namespace, f"{name}-predictor", self.reads)
        self.description = f"InferenceService {name}"
        self._patch_min_replicas = False
        self._max_replicas: int | None = None

    def read(self, fresh: bool = False) -> ScaleReading:
        isvc = _get(self.reads, self.version, self.namespace, "inferenceservices", self.name, "InferenceService", fresh)
        annotations = (isvc.get("metadata") or {}).get("annotations") or {}
        raw_mode = annotations.get(MODE_ANNOTATION)
        mode = _MODE_ALIASES.get(raw_mode, raw_mode) if raw_mode else None
        klass = annotations.get(CLASS_ANNOTATION, "hpa")
        if mode in ("Knative", "ModelMesh"):
            raise TargetBlocked(
                "UnsupportedDeploymentMode",
                f"{self.description} runs in {raw_mode} mode, where Knative/ModelMesh own replicas; "
                f"set annotation {MODE_ANNOTATION}: Standard and {CLASS_ANNOTATION}: external "
                "to let this controller scale it",
            )
        try:
            reading = self.predictor.read(fresh)
        except TargetNotFound:
            hint = (
                ""
                if mode
                else (
                    f" (no {MODE_ANNOTATION} annotation: if the cluster default is Knative, set "
                    f"{MODE_ANNOTATION}: Standard)"
                )
            )
            raise TargetNotFound(
                f"{self.description}: predictor Deployment {self.name}-predictor not found in "
                f"namespace {self.namespace}{hint}"
            ) from None
        predictor = (isvc.get("spec") or {}).get("predictor") or {}
        if klass == "external":
            self._patch_min_replicas = False
            return reading
        if klass == "none":
            self._patch_min_replicas = True
            mx = predictor.get("maxReplicas")
            self._max_replicas = int(mx) if mx else None
            return replace(reading, resource_version=(isvc.get("metadata") or {}).get("resourceVersion"))
        blocked = TargetBlocked(
            "OtherAutoscalerOwnsReplicas",
            f"{self.description} uses autoscalerClass {klass!r}: KServe's {klass} autoscaler owns its "
            f"replicas and this controller will not fight it. Set annotation {CLASS_ANNOTATION}: "
            "external (recommended) or none",
        )
        return replace(reading, blocked=blocked)

    def write(self, replicas: int, reading: ScaleReading) -> None:
        if not self._patch_min_replicas:
            self.predictor.write(replicas, reading)
            return
        predictor: dict[str, Any] = {"minReplicas": replicas}
        if self._max_replicas is not None and self._max_replicas < replicas:
            predictor["maxReplicas"] = replicas
        body = {"metadata": {"resourceVersion": reading.resource_version}, "spec": {"predictor": predictor}}
        answer = call_json(
            self.custom.patch_namespaced_custom_object,
            GROUP,
            self.version,
            self.namespace,
            "inferenceservices",
            self.name,
            body,
        )
        self.reads.wrote(
            GROUP, self.version, "inferenceservices", self.namespace, self.name, reading.resource_version, answer
        )


class LLMInferenceServiceTarget:
    def __init__(
        self,
        custom: client.CustomObjectsApi,
        apps: client.AppsV1Api,
        namespace: str,
        name: str,
        version: str = "v1alpha1",
        reads: Reads | None = None,
    ):
        self.custom, self.apps, self.namespace, self.name, self.version = (
            custom,
            apps,
            namespace,
            name,
            version,
        )
        self.reads: Reads = reads if reads is not None else DirectReads(apps, custom)
        self.description = f"LLMInferenceService {name}"
        self._workload: DeploymentScale | CustomScale | None = None

    def read(self, fresh: bool = False) -> ScaleReading:
        obj = _get(
            self.reads,
            self.version,
            self.namespace,
            "llminferenceservices",
            self.name,
            "LLMInferenceService",
            fresh,
        )
        spec = obj.get("spec") or {}
        if spec.get("worker"):
            workload: DeploymentScale | CustomScale = CustomScale(
                self.custom,
                self.namespace,
                "leaderworkerset.x-k8s.io",
                "v1",
                "leaderworkersets",
                f"{self.name}-kserve-mn",
                "LeaderWorkerSet",
                self.reads,
            )
        else:
            workload = DeploymentScale(self.apps, self.namespace, f"{self.name}-kserve", self.reads)
        self._workload = workload
        try:
            reading = workload.read(fresh)
        except TargetNotFound:
            raise TargetNotFound(
                f"{self.description}: its workload {workload.description} was not found in "
                f"namespace {self.namespace} (not created yet?)"
            ) from None
        if spec.get("replicas") is not None:
            return replace(
                reading,
                blocked=TargetBlocked(
                    "StaticReplicas",
                    f"{self.description} sets spec.replicas={spec['replicas']}, which KServe enforces; "
                    "remove spec.replicas so KServe preserves the replicas this controller sets",
                ),
            )
        if spec.get("scaling") is not None:
            return replace(
                reading,
                blocked=TargetBlocked(
                    "OtherAutoscalerOwnsReplicas",
                    f"{self.description} sets spec.scaling, so KServe's HPA/KEDA owns its replicas; remove "
                    "spec.scaling to let this controller scale it",
                ),
            )
        return reading

    def write(self, replicas: int, reading: ScaleReading) -> None:
        if self._workload is None:
            self.read()
        assert self._workload is not None
        self._workload.write(replicas, reading)
