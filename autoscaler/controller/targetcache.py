"""Target reads from watch caches: no GET per policy per tick.

One informer per resource kind in use (Deployments, InferenceServices, LLMInferenceServices, any resource
serving `/scale`), per watched namespace (or one cluster-wide), created the first time a policy names
that kind. A read is answered from the cached object:
- a Deployment's Scale is derived from the Deployment (replicas, status replicas, selector, version);
- any other `/scale` target's Scale is fetched once per resourceVersion of its object (the Scale carries
  the object's resourceVersion) and reused while the watched object is unchanged;
- after our own write, the server's answer stands in for the object until the watch delivers a newer one.

The cache never answers "not found" on its own: a miss (a new object the watch has not delivered yet), a
kind we may not list (403/404) or an informer that is not synced falls back to one GET. `fresh=True`
(after a 409) always asks the API server. Writes are unchanged: conditional on the resourceVersion the
decision was made on.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from autoscaler.controller.informer import Informer, Obj
from autoscaler.targets.reads import DirectReads

log = logging.getLogger(__name__)
Kind = tuple[str, str, str]  # group, version, plural
PRUNE_EVERY = 256  # memo writes between two sweeps for deleted targets


def _selector_string(sel: Any) -> str | None:
    """A LabelSelector in the string form the `/scale` subresource reports (`status.selector`)."""
    if not isinstance(sel, dict):
        return None
    terms = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or ():
        key, op, values = e.get("key"), e.get("operator"), sorted(e.get("values") or ())
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(str(key))
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms) or None


def deployment_scale(dep: Obj) -> Obj:
    """The autoscaling/v1 Scale the API server would answer for this Deployment."""
    meta, spec, status = dep.get("metadata") or {}, dep.get("spec") or {}, dep.get("status") or {}
    return {
        "metadata": {k: meta.get(k) for k in ("name", "namespace", "resourceVersion")},
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {"replicas": status.get("replicas") or 0, "selector": _selector_string(spec.get("selector"))},
    }


_META = ("name", "namespace", "uid", "resourceVersion", "generation", "annotations")


def trim_target(obj: Obj) -> Obj:
    """What target reads use of a custom resource: identity, annotations (KServe's mode and class), spec."""
    meta = obj.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in _META if k in meta}, "spec": obj.get("spec") or {}}


def trim_deployment(obj: Obj) -> Obj:
    """Of a Deployment: identity, its spec's replicas and selector, its status replicas."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    return {
        "metadata": {k: meta[k] for k in _META if k in meta and k != "annotations"},
        "spec": {"replicas": spec.get("replicas", 1), "selector": spec.get("selector")},
        "status": {"replicas": (obj.get("status") or {}).get("replicas")},
    }


class TargetCache:
    """`Reads` answered from informers; see the module docstring."""

    def __init__(
        self,
        direct: DirectReads,
        make_informers: Callable[[Kind], Sequence[tuple[str | None, Informer]]],
    ):
        self.direct = direct
        self._make = make_informers
        self._informers: dict[Kind, dict[str | None, Informer]] = {}
        self._listed: dict[Kind, threading.Event] = {}  # set once the kind's first list was tried
        self._scales: dict[tuple[Kind, str, str], tuple[str, Obj]] = {}  # (kind, ns, name) -> (object rv, Scale)
        self._written: dict[tuple[Kind, str, str], tuple[str, Obj]] = {}  # stale rv -> what we wrote
        self._lock = threading.Lock()
        self._stop: threading.Event | None = None
        self.fallbacks = 0  # reads the cache could not answer (a GET instead)
        self._memo_writes = 0  # memo entries stored since the last prune

    # -- informers ---------------------------------------------------------------------------------
    @property
    def informers(self) -> list[Informer]:
        with self._lock:
            return [inf for per_ns in self._informers.values() for inf in per_ns.values()]

    def start(self, stop: threading.Event) -> None:
        """Keep every cache current from now on (informers made later are started when made)."""
        with self._lock:
            self._stop = stop
            infs = [inf for per_ns in self._informers.values() for inf in per_ns.values()]
        for inf in infs:
            inf.start(stop)

    def _informer(self, kind: Kind, namespace: str) -> Informer | None:
        with self._lock:
            per_ns = self._informers.get(kind)
            listed = self._listed.setdefault(kind, threading.Event())
            if per_ns is None:
                per_ns = dict(self._make(kind))
                self._informers[kind] = per_ns
                fresh = list(per_ns.values())
                stop = self._stop
            else:
                fresh, stop = [], None
        if not fresh:
            # Another policy's read is making the first list of this kind: wait for it rather than GET
            # (bounded: a list has its own timeout, and a failed list still sets `listed`).
            listed.wait(timeout=65.0)
        for new in fresh:  # the first list happens here, once per kind; the watch keeps it current after
            try:
                new.relist()
            except Exception as e:
                log.warning("cannot list %s (%s); reading those targets directly", new.name, e)
            if stop is not None:
                new.start(stop)
        if fresh:
            listed.set()
        inf = per_ns.get(namespace) or per_ns.get(None)
        if inf is None or not inf.available or not inf.synced.is_set():
            return None
        return inf

    def _cached(self, kind: Kind, namespace: str, name: str) -> Obj | None:
        inf = self._informer(kind, namespace)
        return inf.get(f"{namespace}/{name}") if inf is not None else None

    # -- Reads -------------------------------------------------------------------------------------
    def object(self, group: str, version: str, plural: str, namespace: str, name: str, *, fresh: bool = False) -> Obj:
        kind = (group, version, plural)
        obj = None if fresh else self._cached(kind, namespace, name)
        if obj is None:
            self.fallbacks += 1
            return self.direct.object(group, version, plural, namespace, name)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        with self._lock:
            written = self._written.get((kind, namespace, name))
        if written is not None and written[0] == rv:
            return written[1]
        return obj

    def scale(self, group: str, version: str, plural: str, namespace: str, name: str, *, fresh: bool = False) -> Obj:
        kind = (group, version, plural)
        key = (kind, namespace, name)
        obj = None if fresh else self._cached(kind, namespace, name)
        if obj is None:
            self.fallbacks += 1
            return self.direct.scale(group, version, plural, namespace, name)
        rv = str((obj.get("metadata") or {}).get("resourceVersion"))
        with self._lock:
            written = self._written.get(key)
            if written is not None and written[0] == rv:
                return written[1]  # the watch has not delivered our own write yet
            memo = self._scales.get(key)
        if memo is not None and memo[0] == rv:
            return memo[1]
        if group == "apps" and plural == "deployments":
            scale = deployment_scale(obj)
        else:
            scale = self.direct.scale(group, version, plural, namespace, name)
            if str((scale.get("metadata") or {}).get("resourceVersion")) != rv:
                return scale  # the object moved on meanwhile: use the answer, do not memoize it
        with self._lock:
            self._scales[key] = (rv, scale)
            self._written.pop(key, None)
            self._memo_writes += 1
            due = self._memo_writes >= PRUNE_EVERY
            if due:
                self._memo_writes = 0
        if due:
            self.prune()
        return scale

    def prune(self) -> int:
        """Drop the memos of targets a synced watch no longer holds (deleted objects, renamed targets), so
        a long-running controller's memory follows the live targets, not every target it ever read.
        Returns how many entries were dropped."""
        with self._lock:
            keys = set(self._scales) | set(self._written)
            informers = {kind: dict(per_ns) for kind, per_ns in self._informers.items()}
        gone = []
        for key in keys:
            kind, namespace, name = key
            per_ns = informers.get(kind) or {}
            inf = per_ns.get(namespace) or per_ns.get(None)
            if inf is not None and inf.available and inf.synced.is_set() and inf.get(f"{namespace}/{name}") is None:
                gone.append(key)
        with self._lock:
            for key in gone:
                self._scales.pop(key, None)
                self._written.pop(key, None)
        return len(gone)

    def wrote(
        self, group: str, version: str, plural: str, namespace: str, name: str, before: str | None, answer: Obj
    ) -> None:
        if before is None:
            return
        with self._lock:
            self._written[((group, version, plural), namespace, name)] = (str(before), answer)
