"""From a policy's targetRef to a ScaleTarget, always in the policy's own namespace."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from kubernetes import client

from autoscaler.policy import TargetRef
from autoscaler.targets.api import request_timeout
from autoscaler.targets.base import ScaleTarget, TargetNotFound
from autoscaler.targets.kserve import GROUP as KSERVE_GROUP
from autoscaler.targets.kserve import InferenceServiceTarget, LLMInferenceServiceTarget
from autoscaler.targets.reads import DirectReads, Reads
from autoscaler.targets.scale import KNOWN_PLURALS, CustomScale, DeploymentScale


@dataclass
class TargetApis:
    apps: client.AppsV1Api
    custom: client.CustomObjectsApi
    api_client: client.ApiClient


class PluralResolver:
    """kind -> plural through API discovery (`GET /apis/{group}/{version}`), cached; a small table first."""

    def __init__(self, api_client: client.ApiClient):
        self.api_client = api_client
        self._cache: dict[tuple[str, str, str], str] = {}
        self._lock = threading.Lock()

    def plural(self, group: str, version: str, kind: str) -> str:
        if kind in KNOWN_PLURALS:
            return KNOWN_PLURALS[kind]
        key = (group, version, kind)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        found = None
        try:
            doc = self.api_client.call_api(
                f"/apis/{group}/{version}",
                "GET",
                response_type="object",
                auth_settings=["BearerToken"],
                _return_http_data_only=True,
                _request_timeout=request_timeout(),
            )
            for r in (doc or {}).get("resources", []):
                if r.get("kind") == kind and "/" not in r.get("name", ""):
                    found = r["name"]
                    break
        except Exception:  # discovery is a convenience; fall back to the usual plural
            found = None
        plural = found or kind.lower() + "s"
        with self._lock:
            self._cache[key] = plural
        return plural


def resolve_target(
    apis: TargetApis, plurals: PluralResolver, ref: TargetRef, namespace: str, reads: Reads | None = None
) -> ScaleTarget:
    """The target named by `ref` in `namespace` (the policy's namespace: a targetRef cannot name another).
    `reads`: where the target reads its objects (a watch cache), by default one GET per read."""
    reads = reads if reads is not None else DirectReads(apis.apps, apis.custom)
    group, _, version = ref.api_version.rpartition("/")
    if not group:
        raise TargetNotFound(
            f"{ref.kind} {ref.name}: core-group ({ref.api_version}) targets are not supported; "
            "use a Deployment or a resource with a /scale subresource"
        )
    if group == KSERVE_GROUP and ref.kind == "InferenceService":
        return InferenceServiceTarget(apis.custom, apis.apps, namespace, ref.name, version, reads)
    if group == KSERVE_GROUP and ref.kind == "LLMInferenceService":
        return LLMInferenceServiceTarget(apis.custom, apis.apps, namespace, ref.name, version, reads)
    if group == "apps" and ref.kind == "Deployment":
        return DeploymentScale(apis.apps, namespace, ref.name, reads)
    plural = plurals.plural(group, version, ref.kind)
    return CustomScale(apis.custom, namespace, group, version, plural, ref.name, ref.kind, reads)
