"""A small fake Kubernetes API server over real HTTP, for driving the official `kubernetes` client.

What it models (enough for the controller, and faithful where the controller's safety depends on it):
- namespaced and cluster-scoped objects under `/api/v1/...` and `/apis/{group}/{version}/...`;
- list (label and simple field selectors), get, create (POST), replace (PUT), patch (merge, strategic
  treated as merge, JSON patch), delete;
- `resourceVersion` on every write, optimistic concurrency (a PUT or a patch carrying a stale
  `metadata.resourceVersion` gets 409), `generation` bumped on spec changes, `uid`;
- the `/status` subresource (only status changes) and the `/scale` subresource (autoscaling/v1 Scale,
  per-resource spec/status/selector paths, Deployment selector from `spec.selector.matchLabels`);
- watch with `resourceVersion`, chunked streaming, bookmarks ignored, `410 Gone` for compacted versions;
- discovery for `/apis/{group}/{version}`;
- fault injection (`fail(method, path regex, status, times)`), hung requests (`hang(method, path regex,
  seconds)`: the server accepts the request and answers only after that long) and a request log.
"""

from __future__ import annotations

import bisect
import copy
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from autoscaler.observe.selector import LabelSelector

Obj = dict[str, Any]
_PATH = re.compile(
    r"^/(?:api/(?P<cv>v1)|apis/(?P<g>[^/]+)/(?P<v>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>status|scale))?$"
)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def json_patch(doc: Obj, ops: list[Obj]) -> Obj:
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent.setdefault(p, {})
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), op["value"])
            else:
                parent[last] = op["value"]
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif (
            op["op"] == "test" and (parent[int(last)] if isinstance(parent, list) else parent.get(last)) != op["value"]
        ):
            raise ValueError("test failed")
    return doc


def _dig(obj: Any, dotted: str) -> Any:
    for part in dotted.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _set(obj: Obj, dotted: str, value: Any) -> None:
    parts = dotted.strip(".").split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


def _field_match(obj: Obj, selector: str) -> bool:
    for term in (t for t in selector.split(",") if t):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if str(_dig(obj, k) or "") == v:
                return False
        else:
            k, v = term.split("=", 1)
            if str(_dig(obj, k.rstrip("=")) or "") != v:
                return False
    return True


@dataclass
class ScalePaths:
    spec: str = "spec.replicas"
    status: str = "status.replicas"
    selector: str | None = None  # None: from spec.selector.matchLabels (Deployment style)


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int
    times: int


class FakeKube:
    def __init__(self) -> None:
        self.store: dict[tuple[str, str], dict[tuple[str, str], Obj]] = {}
        self.rv = 100
        self.history: list[tuple[int, str, str, str, Obj]] = []  # (rv, type, group, plural, obj)
        self.compacted_rv = 0
        self.scale_paths: dict[tuple[str, str], ScalePaths] = {
            ("apps", "deployments"): ScalePaths(),
            ("apps", "statefulsets"): ScalePaths(),
            ("leaderworkerset.x-k8s.io", "leaderworkersets"): ScalePaths(selector="status.hpaPodSelector"),
        }
        self.kinds: dict[tuple[str, str], str] = {}
        self.faults: list[Fault] = []
        self.hangs: list[tuple[str, re.Pattern[str], float]] = []
        self.requests: list[tuple[str, str, str]] = []  # (method, path, query)
        self.authorizations: set[str] = set()  # Authorization headers seen
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.server: ThreadingHTTPServer | None = None
        self.stopping = False

    # -- test helpers --------------------------------------------------------------------------------
    def fail(self, method: str, path_regex: str, status: int, times: int = 1) -> None:
        with self.lock:
            self.faults.append(Fault(method.upper(), re.compile(path_regex), status, times))

    def hang(self, method: str, path_regex: str, seconds: float) -> None:
        with self.lock:
            self.hangs.append((method.upper(), re.compile(path_regex), seconds))

    def _hang_for(self, method: str, path: str) -> float:
        with self.lock:
            return max((s for m, rx, s in self.hangs if m in (method, "*") and rx.search(path)), default=0.0)

    def calls(self, method: str | None = None, path_regex: str = "") -> list[tuple[str, str, str]]:
        rx = re.compile(path_regex)
        with self.lock:
            return [r for r in self.requests if (method is None or r[0] == method) and rx.search(r[1])]

    def reset_log(self) -> None:
        with self.lock:
            self.requests.clear()

    def put(self, group: str, plural: str, obj: Obj, kind: str | None = None) -> Obj:
        """Create or overwrite an object directly (as another actor would), with a new resourceVersion."""
        with self.lock:
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            key = (meta.get("namespace", ""), meta["name"])
            old = self.store.setdefault((group, plural), {}).get(key)
            meta.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", old["metadata"]["creationTimestamp"] if old else _now())
            meta.setdefault("generation", (old or {}).get("metadata", {}).get("generation", 0) + 1)
            if kind:
                self.kinds[(group, plural)] = kind
            return self._commit(group, plural, key, obj, "MODIFIED" if old else "ADDED")

    def get(self, group: str, plural: str, namespace: str, name: str) -> Obj | None:
        with self.lock:
            o = self.store.get((group, plural), {}).get((namespace, name))
            return copy.deepcopy(o) if o else None

    def delete(self, group: str, plural: str, namespace: str, name: str) -> None:
        with self.lock:
            obj = self.store.get((group, plural), {}).pop((namespace, name), None)
            if obj is not None:
                self.rv += 1
                obj = copy.deepcopy(obj)
                obj["metadata"]["resourceVersion"] = str(self.rv)
                self.history.append((self.rv, "DELETED", group, plural, obj))
                self.changed.notify_all()

    def items(self, group: str, plural: str) -> list[Obj]:
        with self.lock:
            return [copy.deepcopy(o) for o in self.store.get((group, plural), {}).values()]

    def compact(self) -> None:
        """Forget watch history (as etcd compaction does): older resourceVersions get 410 Gone."""
        with self.lock:
            self.compacted_rv = self.rv
            self.history.clear()

    # -- core ----------------------------------------------------------------------------------------
    def _commit(self, group: str, plural: str, key: tuple[str, str], obj: Obj, kind: str) -> Obj:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        if key[0]:
            obj["metadata"]["namespace"] = key[0]
        self.store.setdefault((group, plural), {})[key] = obj
        self.history.append((self.rv, kind, group, plural, copy.deepcopy(obj)))
        self.changed.notify_all()
        return copy.deepcopy(obj)

    def _check_rv(self, current: Obj, wanted: str | None) -> None:
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                "Operation cannot be fulfilled: the object has been modified; "
                "please apply your changes to the latest version and try again",
            )

    def _scale_of(self, group: str, plural: str, obj: Obj) -> Obj:
        paths = self.scale_paths[(group, plural)]
        if paths.selector:
            selector = _dig(obj, paths.selector)
        else:
            ml = _dig(obj, "spec.selector.matchLabels") or {}
            selector = ",".join(f"{k}={v}" for k, v in sorted(ml.items()))
        return {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": {
                "name": obj["metadata"]["name"],
                "namespace": obj["metadata"].get("namespace"),
                "resourceVersion": obj["metadata"]["resourceVersion"],
                "uid": obj["metadata"]["uid"],
            },
            "spec": {"replicas": _dig(obj, paths.spec) or 0},
            "status": {"replicas": _dig(obj, paths.status) or 0, "selector": selector},
        }

    def handle(self, method: str, path: str, query: dict[str, str], body: Any, ctype: str) -> tuple[int, Any]:
        with self.lock:
            self.requests.append((method, path, "&".join(f"{k}={v}" for k, v in sorted(query.items()))))
            for f in self.faults:
                if f.times > 0 and f.method in (method, "*") and f.path.search(path):
                    f.times -= 1
                    raise ApiError(f.status, "Injected", f"injected failure {f.status}")
            m = re.match(r"^/apis/([^/]+)/([^/]+)$", path)
            if m:
                return 200, self._discovery(m.group(1), m.group(2))
            m = _PATH.match(path)
            if not m:
                raise ApiError(404, "NotFound", f"no route {path}")
            group = m.group("g") or ""
            version = m.group("v") or "v1"
            ns, plural, name, sub = m.group("ns") or "", m.group("plural"), m.group("name"), m.group("sub")
            coll = self.store.setdefault((group, plural), {})
            api_version = f"{group}/{version}" if group else "v1"
            if name is None:
                if method == "GET":
                    return 200, self._list(group, plural, ns, query, api_version)
                if method == "POST":
                    obj = copy.deepcopy(body)
                    meta = obj.setdefault("metadata", {})
                    key = (ns, meta["name"])
                    if key in coll:
                        raise ApiError(409, "AlreadyExists", f"{plural} {meta['name']} already exists")
                    meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
                    return 201, self._commit(group, plural, key, obj, "ADDED")
                raise ApiError(405, "MethodNotAllowed", method)
            key = (ns, name)
            current = coll.get(key)
            if current is None:
                raise ApiError(404, "NotFound", f'{plural} "{name}" not found')
            if sub == "scale":
                if (group, plural) not in self.scale_paths:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                if method == "GET":
                    return 200, self._scale_of(group, plural, current)
                if method in ("PUT", "PATCH"):
                    scale = self._scale_of(group, plural, current)
                    new_scale = body if method == "PUT" else self._patched(scale, body, ctype)
                    self._check_rv(current, (new_scale.get("metadata") or {}).get("resourceVersion"))
                    obj = copy.deepcopy(current)
                    _set(obj, self.scale_paths[(group, plural)].spec, int(new_scale["spec"]["replicas"]))
                    obj["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
                    out = self._commit(group, plural, key, obj, "MODIFIED")
                    return 200, self._scale_of(group, plural, out)
            if method == "GET":
                return 200, copy.deepcopy(current)
            if method == "DELETE":
                self.delete(group, plural, ns, name)
                return 200, {"kind": "Status", "status": "Success"}
            if method in ("PUT", "PATCH"):
                new = body if method == "PUT" else self._patched(current, body, ctype)
                new = copy.deepcopy(new)
                self._check_rv(current, (new.get("metadata") or {}).get("resourceVersion"))
                meta = dict(current["metadata"])
                meta.update({k: v for k, v in (new.get("metadata") or {}).items() if k in ("labels", "annotations")})
                if sub == "status":
                    obj = copy.deepcopy(current)
                    obj["status"] = new.get("status")
                else:
                    obj = new
                    if "status" in current and group not in ("", "coordination.k8s.io"):
                        obj["status"] = current["status"]
                    if new.get("spec") != current.get("spec"):
                        meta["generation"] = meta.get("generation", 1) + 1
                obj["metadata"] = meta
                return 200, self._commit(group, plural, key, obj, "MODIFIED")
            raise ApiError(405, "MethodNotAllowed", method)

    def _patched(self, current: Obj, body: Any, ctype: str) -> Obj:
        if "json-patch" in ctype or isinstance(body, list):
            if not isinstance(body, list):  # as the real server: a JSON patch must be an array
                raise ApiError(400, "BadRequest", "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
            return json_patch(current, body)
        return merge_patch(current, body)

    def _list(self, group: str, plural: str, ns: str, query: dict[str, str], api_version: str) -> Obj:
        items = [
            copy.deepcopy(o)
            for (ons, _), o in sorted(self.store.get((group, plural), {}).items())
            if not ns or ons == ns
        ]
        if query.get("labelSelector"):
            sel = LabelSelector(query["labelSelector"])
            items = [o for o in items if sel.matches(o["metadata"].get("labels"))]
        if query.get("fieldSelector"):
            items = [o for o in items if _field_match(o, query["fieldSelector"])]
        kind = self.kinds.get((group, plural), plural[:-1].capitalize())
        for o in items:
            o.setdefault("apiVersion", api_version)
            o.setdefault("kind", kind)
        return {
            "apiVersion": api_version,
            "kind": f"{kind}List",
            "metadata": {"resourceVersion": str(self.rv)},
            "items": items,
        }

    def _discovery(self, group: str, version: str) -> Obj:
        resources = []
        for g, plural in self.store:
            if g == group:
                resources.append(
                    {
                        "name": plural,
                        "kind": self.kinds.get((g, plural), plural[:-1].capitalize()),
                        "namespaced": True,
                    }
                )
                if (g, plural) in self.scale_paths:
                    resources.append({"name": f"{plural}/scale", "kind": "Scale", "namespaced": True})
        return {"kind": "APIResourceList", "groupVersion": f"{group}/{version}", "resources": resources}

    def watch(self, path: str, query: dict[str, str]) -> Iterator[Obj]:
        m = _PATH.match(path)
        assert m
        group, ns, plural = m.group("g") or "", m.group("ns") or "", m.group("plural")
        since = int(query.get("resourceVersion") or 0)
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 30)
        sel = LabelSelector(query["labelSelector"]) if query.get("labelSelector") else None
        fsel = query.get("fieldSelector")
        with self.lock:
            self.requests.append(("WATCH", path, f"resourceVersion={since}"))
            if since and since < self.compacted_rv:
                yield {
                    "type": "ERROR",
                    "object": {
                        "kind": "Status",
                        "code": 410,
                        "reason": "Expired",
                        "message": f"too old resource version: {since}",
                    },
                }
                return
        while not self.stopping and time.monotonic() < deadline:
            with self.lock:
                # history is in resourceVersion order: start after `since` instead of scanning it all
                start = bisect.bisect_right(self.history, since, key=lambda h: h[0])
                batch = [
                    (rv, t, o)
                    for rv, t, g, p, o in self.history[start:]
                    if g == group and p == plural and (not ns or o["metadata"].get("namespace") == ns)
                ]
                if not batch:
                    self.changed.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                    continue
            for rv, t, o in batch:
                since = rv
                if sel and not sel.matches(o["metadata"].get("labels")):
                    continue
                if fsel and not _field_match(o, fsel):
                    continue
                yield {"type": t, "object": o}

    # -- HTTP ----------------------------------------------------------------------------------------
    def start(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out as separate writes: without this, Nagle + delayed ACK add 40 ms.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _body(self) -> tuple[Any, str]:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                return (json.loads(raw) if raw else None), self.headers.get("Content-Type", "")

            def _send(self, code: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _do(self) -> None:
                url = urlsplit(self.path)
                if self.headers.get("Authorization"):
                    fake.authorizations.add(self.headers["Authorization"])
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                body, ctype = self._body()
                hang = fake._hang_for(self.command, url.path)
                if hang:
                    with fake.lock:
                        fake.requests.append((self.command, url.path, "hung"))
                    deadline = time.monotonic() + hang
                    while not fake.stopping and time.monotonic() < deadline:
                        time.sleep(0.05)
                try:
                    if self.command == "GET" and query.get("watch") in ("true", "1", "True"):
                        self._stream(url.path, query)
                        return
                    code, payload = fake.handle(self.command, url.path, query, body, ctype)
                    self._send(code, payload)
                except ApiError as e:
                    self._send(
                        e.code,
                        {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "status": "Failure",
                            "message": e.message,
                            "reason": e.reason,
                            "code": e.code,
                        },
                    )

            def _stream(self, path: str, query: dict[str, str]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for ev in fake.watch(path, query):
                        line = json.dumps(ev).encode() + b"\n"
                        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _do

            def log_message(self, format: str, *args: Any) -> None:
                return

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog of 5 reset connections when many clients connect at once

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.stopping = True
        with self.lock:
            self.changed.notify_all()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
