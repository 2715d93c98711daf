"""Kubernetes events on scale actions and problems, deduplicated like the kubelet's correlator.

They are core/v1 events in the legacy form (no eventTime), which a real apiserver validates without the
series/reportingController rules.

The same (object, type, reason, message) within `dedupe_window_seconds` updates the existing event's
count and lastTimestamp (at most once per `min_update_interval_seconds`) instead of creating another.
Failing to record an event is logged and never fails a reconcile.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from autoscaler.observe.timefmt import format_time
from autoscaler.targets.api import API_ERRORS, ApiException, call_json

log = logging.getLogger(__name__)
COMPONENT = "inference-autoscaler"


@dataclass
class _Sent:
    name: str
    namespace: str
    count: int
    first: float
    last_sent: float


def event_body(obj: dict[str, Any], name: str, type_: str, reason: str, message: str, now: str,
               instance: str) -> dict[str, Any]:
    """A core/v1 Event `name` about `obj` (its apiVersion, kind, metadata.name/namespace/uid/resourceVersion),
    first and last seen `now`; the message cut to 1 KiB and the reporting instance to 128 characters, as the
    API server's validation requires."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace", "default")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": ns},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta.get("name", ""),
            "namespace": ns,
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": type_,
        "reason": reason,
        "message": message[:1024],
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "action": reason,
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance[:128],
    }


class EventRecorder:
    def __init__(
        self,
        core: client.CoreV1Api,
        instance: str,
        clock: Callable[[], float] = time.time,
        dedupe_window_seconds: float = 600.0,
        min_update_interval_seconds: float = 60.0,
    ):
        self.core, self.instance, self.clock = core, instance, clock
        self.window, self.min_update = dedupe_window_seconds, min_update_interval_seconds
        self._sent: dict[tuple[str, ...], _Sent] = {}
        self.created = self.updated = self.suppressed = 0
        self._lock = threading.Lock()  # policies are reconciled in parallel

    def record(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        """`obj` is the involved object (its apiVersion, kind, metadata.name/namespace/uid are used)."""
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", "default"), meta.get("name", "")
        key = (ns, name, meta.get("uid", ""), type_, reason, message)
        now = self.clock()
        with self._lock:
            prev = self._sent.get(key)
            if prev is not None and now - prev.first >= self.window:
                prev = None
            if prev is not None:
                prev.count += 1
                if now - prev.last_sent < self.min_update:
                    self.suppressed += 1
                    return
                prev.last_sent = now
        try:
            if prev is not None:
                # A JSON patch: for core/v1 the client sends application/json-patch+json.
                call_json(self.core.patch_namespaced_event, prev.name, prev.namespace,
                          [{"op": "replace", "path": "/count", "value": prev.count},
                           {"op": "replace", "path": "/lastTimestamp", "value": format_time(now)}])
                self.updated += 1
                return
            ev_name = f"{name}.{uuid.uuid4().hex[:16]}"
            body = event_body(obj, ev_name, type_, reason, message, format_time(now), self.instance)
            call_json(self.core.create_namespaced_event, ns, body)
            with self._lock:
                self._sent[key] = _Sent(ev_name, ns, 1, now, now)
                self.created += 1
                if len(self._sent) > 10_000:
                    self._sent = {k: v for k, v in self._sent.items() if now - v.first < self.window}
        except API_ERRORS as e:
            # An event is a courtesy: failing to record one (API error or API server unreachable) never
            # fails a reconcile.
            why = e.reason if isinstance(e, ApiException) else f"{type(e).__name__}: {e}"
            log.warning("could not record event %s on %s/%s: %s", reason, ns, name, why)
