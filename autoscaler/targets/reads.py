"""How targets read the objects they scale: straight from the API server, or from a watch cache.

A target asks for a resource's `/scale` view or for the object itself; `DirectReads` answers with one GET
each time. The controller plugs in a cache (autoscaler/controller/targetcache.py) that answers from
informers and falls back to these GETs when the cache cannot answer. `fresh=True` always asks the API
server (after a 409, the cached copy is known to be stale).

Reads raise `ApiException` (404 included); targets turn a 404 into `TargetNotFound`.
"""

from __future__ import annotations

from typing import Any, Protocol

from kubernetes import client

from autoscaler.targets.api import call_json

Obj = dict[str, Any]


class Reads(Protocol):
    def scale(self, group: str, version: str, plural: str, namespace: str, name: str, *, fresh: bool = False) -> Obj:
        """The autoscaling/v1 Scale of a resource serving `/scale`."""
        ...

    def object(self, group: str, version: str, plural: str, namespace: str, name: str, *, fresh: bool = False) -> Obj:
        """The object itself."""
        ...

    def wrote(
        self, group: str, version: str, plural: str, namespace: str, name: str, before: str | None, answer: Obj
    ) -> None:
        """We changed the object whose resourceVersion was `before`; `answer` is the server's reply."""
        ...


class DirectReads:
    """One GET per read (the behaviour without a cache)."""

    def __init__(self, apps: client.AppsV1Api, custom: client.CustomObjectsApi):
        self.apps, self.custom = apps, custom

    def scale(self, group: str, version: str, plural: str, namespace: str, name: str, *, fresh: bool = False) -> Obj:
        if group == "apps" and plural == "deployments":
            return call_json(self.apps.read_namespaced_deployment_scale, name, namespace)
        return call_json(self.custom.get_namespaced_custom_object_scale, group, version, namespace, plural, name)

    def object(self, group: str, version: str, plural: str, namespace: str, name: str, *, fresh: bool = False) -> Obj:
        return call_json(self.custom.get_namespaced_custom_object, group, version, namespace, plural, name)

    def wrote(
        self, group: str, version: str, plural: str, namespace: str, name: str, before: str | None, answer: Obj
    ) -> None:
        return None
