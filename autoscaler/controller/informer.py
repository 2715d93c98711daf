"""List + watch cache of one resource (a minimal informer).

It lists, then watches from the list's resourceVersion (with bookmarks), and relists when the server
says the version is too old (410 Gone, as an HTTP status or an ERROR event in the stream). Objects are
kept as plain dicts; an optional `transform` trims them (pods lose what the controller never reads).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

from autoscaler.targets.api import ApiException, call_json, iter_lines_bounded, request_timeout

log = logging.getLogger(__name__)
Obj = dict[str, Any]


class Gone(Exception):
    """The watch's resourceVersion is too old: relist."""


def object_key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class Informer:
    def __init__(
        self,
        name: str,
        list_fn: Callable[..., Any],
        *args: Any,
        field_selector: str | None = None,
        label_selector: str | None = None,
        transform: Callable[[Obj], Obj | None] | None = None,
        on_change: Callable[[str, Obj], None] | None = None,
        watch_timeout_seconds: int = 300,
        optional: bool = False,
    ):
        self.name = name
        self._list_fn, self._args = list_fn, args
        self._selectors: dict[str, str] = {}
        if field_selector:
            self._selectors["field_selector"] = field_selector
        if label_selector:
            self._selectors["label_selector"] = label_selector
        self._transform = transform
        self.on_change = on_change
        self._watch_timeout = watch_timeout_seconds
        self._items: dict[str, Obj] = {}
        # An optional resource (an HPA or KEDA ScaledObject we only read to avoid fighting over a target)
        # may be absent from the cluster (no CRD: 404) or from our RBAC (403): then the cache is empty,
        # counts as synced, and is listed again now and then.
        self.optional = optional
        self.available = True
        self._lock = threading.Lock()
        self.resource_version: str | None = None
        self.synced = threading.Event()
        self.healthy = True
        self.relists = 0

    # -- reading -----------------------------------------------------------------------------------
    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._items.values())

    def get(self, key: str) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def __len__(self) -> int:
        return len(self._items)

    # -- filling -----------------------------------------------------------------------------------
    def _keep(self, obj: Obj) -> Obj | None:
        return self._transform(obj) if self._transform is not None else obj

    def relist(self) -> None:
        # A full list of a big cluster can take longer than one object's round trip: a longer read timeout.
        connect, read = request_timeout()
        try:
            doc = call_json(
                self._list_fn, *self._args, _request_timeout=(connect, max(read, 60.0)), **self._selectors
            )
        except ApiException as e:
            if not (self.optional and e.status in (403, 404)):
                raise
            if self.available:
                log.warning("cannot list %s (HTTP %s); treated as none", self.name, e.status)
            with self._lock:
                self._items, self.resource_version = {}, None
            self.available = False
            self.synced.set()
            return
        self.available = True
        kind = (doc.get("kind") or "").removesuffix("List")
        items: dict[str, Obj] = {}
        for obj in doc.get("items") or ():
            if kind and "kind" not in obj:
                obj["kind"] = kind
                obj.setdefault("apiVersion", doc.get("apiVersion"))
            kept = self._keep(obj)
            if kept is not None:
                items[object_key(kept)] = kept
        with self._lock:
            self._items = items
            self.resource_version = (doc.get("metadata") or {}).get("resourceVersion")
        self.relists += 1
        if self.on_change is not None:
            for obj in items.values():
                self.on_change("ADDED", obj)
        self.synced.set()
        self.healthy = True

    def _apply(self, kind: str, obj: Obj) -> None:
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        key = object_key(obj)
        with self._lock:
            if kind == "DELETED":
                self._items.pop(key, None)
            else:
                kept = self._keep(obj)
                if kept is None:
                    self._items.pop(key, None)
                else:
                    self._items[key] = kept
            if rv:
                self.resource_version = rv
        if self.on_change is not None and kind != "DELETED":
            self.on_change(kind, obj)

    def watch_once(self, stop: threading.Event) -> None:
        """One watch request, until the server ends it (timeout) or `stop` is set."""
        try:
            resp = self._list_fn(
                *self._args,
                watch=True,
                resource_version=self.resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=self._watch_timeout,
                _preload_content=False,
                _request_timeout=(10, self._watch_timeout + 30),
                **self._selectors,
            )
        except ApiException as e:
            if e.status == 410:
                raise Gone() from None
            raise
        try:
            for line in iter_lines_bounded(resp):
                if stop.is_set():
                    return
                if not line:
                    continue
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone()
                    raise ApiException(status=obj.get("code"), reason=obj.get("message"))
                self._apply(kind, obj)
        finally:
            resp.release_conn()

    def run(self, stop: threading.Event, initial_delay: float = 0.0) -> None:
        """Keep the cache current until `stop`: relist when needed, watch otherwise, back off on errors."""
        delay = 1.0
        stop.wait(initial_delay)
        while not stop.is_set():
            try:
                if self.resource_version is None or not self.synced.is_set():
                    self.relist()
                if not self.available:
                    stop.wait(60.0)
                    continue
                self.watch_once(stop)
                delay = 1.0
            except Gone:
                log.info("watch expired; relisting", extra={"informer": self.name})
                self.resource_version = None
            except Exception as e:  # keep the cache we have; retry with backoff
                self.healthy = False
                log.warning("watch failed: %s", e, extra={"informer": self.name})
                stop.wait(delay)
                delay = min(delay * 2, 30.0)

    def start(self, stop: threading.Event) -> threading.Thread:
        t = threading.Thread(target=self.run, args=(stop,), name=f"informer-{self.name}", daemon=True)
        t.start()
        return t
