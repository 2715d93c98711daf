"""Targets scaled through the `/scale` subresource: Deployment, LeaderWorkerSet, any CRD that serves it.

Every write carries the resourceVersion that was read, so a concurrent change gives a 409 instead of
being overwritten.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from autoscaler.targets.api import ApiException, call_json, is_not_found
from autoscaler.targets.base import ScaleReading, TargetNotFound
from autoscaler.targets.reads import DirectReads, Reads

# Kinds whose plural is not just lower(kind) + "s", or that are common enough to skip discovery.
KNOWN_PLURALS: dict[str, str] = {
    "Deployment": "deployments",
    "StatefulSet": "statefulsets",
    "ReplicaSet": "replicasets",
    "LeaderWorkerSet": "leaderworkersets",
}


def reading_from_scale(scale: dict[str, Any]) -> ScaleReading:
    spec = scale.get("spec") or {}
    status = scale.get("status") or {}
    return ScaleReading(
        replicas=int(spec.get("replicas") or 0),
        status_replicas=int(status.get("replicas") or 0),
        selector=status.get("selector") or None,
        resource_version=(scale.get("metadata") or {}).get("resourceVersion"),
    )


class DeploymentScale:
    """`apps/v1` Deployment through `deployments/{name}/scale` (read + conditional replace)."""

    def __init__(self, apps: client.AppsV1Api, namespace: str, name: str, reads: Reads | None = None):
        self.apps, self.namespace, self.name = apps, namespace, name
        self.description = f"Deployment {name}"
        self.reads: Reads = reads if reads is not None else DirectReads(apps, client.CustomObjectsApi(apps.api_client))

    def read(self, fresh: bool = False) -> ScaleReading:
        try:
            return reading_from_scale(
                self.reads.scale("apps", "v1", "deployments", self.namespace, self.name, fresh=fresh)
            )
        except ApiException as e:
            if is_not_found(e):
                raise TargetNotFound(f"{self.description} not found in namespace {self.namespace}") from None
            raise

    def write(self, replicas: int, reading: ScaleReading) -> None:
        body = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": reading.resource_version,
            },
            "spec": {"replicas": replicas},
        }
        answer = call_json(self.apps.replace_namespaced_deployment_scale, self.name, self.namespace, body)
        self.reads.wrote("apps", "v1", "deployments", self.namespace, self.name, reading.resource_version, answer)


class CustomScale:
    """Any namespaced resource serving `/scale` (LeaderWorkerSet, StatefulSet, CRDs), via merge-patch."""

    def __init__(
        self,
        custom: client.CustomObjectsApi,
        namespace: str,
        group: str,
        version: str,
        plural: str,
        name: str,
        kind: str,
        reads: Reads | None = None,
    ):
        self.custom, self.namespace = custom, namespace
        self.group, self.version, self.plural, self.name = group, version, plural, name
        self.description = f"{kind} {name}"
        self.reads: Reads = reads if reads is not None else DirectReads(client.AppsV1Api(custom.api_client), custom)

    def read(self, fresh: bool = False) -> ScaleReading:
        try:
            scale = self.reads.scale(self.group, self.version, self.plural, self.namespace, self.name, fresh=fresh)
        except ApiException as e:
            if is_not_found(e):
                raise TargetNotFound(
                    f"{self.description} ({self.plural}.{self.group}) not found in namespace "
                    f"{self.namespace}, or it has no /scale subresource"
                ) from None
            raise
        return reading_from_scale(scale)

    def write(self, replicas: int, reading: ScaleReading) -> None:
        body = {"metadata": {"resourceVersion": reading.resource_version}, "spec": {"replicas": replicas}}
        answer = call_json(
            self.custom.patch_namespaced_custom_object_scale,
            self.group,
            self.version,
            self.namespace,
            self.plural,
            self.name,
            body,
        )
        self.reads.wrote(
            self.group, self.version, self.plural, self.namespace, self.name, reading.resource_version, answer
        )
