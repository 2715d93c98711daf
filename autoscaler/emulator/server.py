"""The emulator's HTTP server: every replica's /metrics from one process, on one port.

Routes:
- `GET /replica/<id>/metrics`: replica `<id>`'s exposition (text format 0.0.4), 404 once it is gone.
- `GET /targets`: the live replicas as Prometheus HTTP service discovery (`http_sd_configs`) JSON:
  one target group per replica, with `__metrics_path__`, and `instance` set per replica (all replicas
  share one address, so Prometheus's default `instance` would merge them), plus `namespace`, `pod`.
  The same JSON is written to `targets_file` (for `file_sd_configs`) whenever the replica set changes.
- `GET /truth`: the fleet's own totals at the current simulated time (ground truth for tests).
- `GET /healthz`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from dataclasses import asdict, is_dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from autoscaler.emulator.exposition import CONTENT_TYPE, render
from autoscaler.emulator.fleet_driver import FleetDriver, Snapshot

log = logging.getLogger("autoscaler.emulator")
_REPLICA_PATH = re.compile(r"^/replica/(\d+)/metrics/?$")


class _Server(ThreadingHTTPServer):
    # Prometheus (or a scraper) opens many connections at once; the default backlog of 5 drops SYNs and
    # turns a burst of scrapes into 1 s connect retries.
    request_queue_size = 1024
    daemon_threads = True


class EmulatorServer:
    def __init__(self, driver: FleetDriver, *, model: str, engine: str = "vllm", host: str = "127.0.0.1",
                 port: int = 0, namespace: str = "default", targets_file: str | Path | None = None) -> None:
        self.driver = driver
        self.model = model
        self.engine = engine
        self.namespace = namespace
        self.targets_file = Path(targets_file) if targets_file else None
        self._cache: dict[int, tuple[float, bytes]] = {}
        self._cache_lock = threading.Lock()
        self._created: dict[int, float] = {}
        self._last_ids: tuple[int, ...] | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._handle(self)

        self.httpd = _Server((host, port), Handler)
        addr = self.httpd.server_address
        self.host, self.port = str(addr[0]), int(addr[1])
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def replica_url(self, replica_id: int) -> str:
        return f"{self.base_url}/replica/{replica_id}/metrics"

    def metrics_for(self, replica_id: int, snap: Snapshot | None = None) -> bytes | None:
        snap = snap or self.driver.snapshot
        rep = next((r for r in snap.replicas if r.replica_id == replica_id), None)
        if rep is None:
            return None
        with self._cache_lock:
            hit = self._cache.get(replica_id)
            if hit is not None and hit[0] == snap.sim_time:
                return hit[1]
            created = self._created.setdefault(replica_id, snap.wall_time)
        body = render(rep, model=self.model, engine=self.engine, created=created)
        with self._cache_lock:
            self._cache[replica_id] = (snap.sim_time, body)
        return body

    def targets(self, snap: Snapshot | None = None) -> list[dict[str, Any]]:
        snap = snap or self.driver.snapshot
        return [
            {
                "targets": [f"{self.host}:{self.port}"],
                "labels": {
                    "__metrics_path__": f"/replica/{r.replica_id}/metrics",
                    "instance": f"replica-{r.replica_id}",
                    "pod": f"{self.model.replace('/', '-').lower()}-{r.replica_id}",
                    "namespace": self.namespace,
                },
            }
            for r in snap.replicas
        ]

    def truth(self) -> dict[str, Any]:
        snap = self.driver.snapshot
        t = snap.truth
        fleet = asdict(t) if is_dataclass(t) and not isinstance(t, type) else t
        return {"sim_time": snap.sim_time, "wall_time": snap.wall_time, "replicas": len(snap.replicas),
                "target": self.driver.target, "fleet": fleet}

    def sync_targets_file(self) -> None:
        snap = self.driver.snapshot
        ids = tuple(r.replica_id for r in snap.replicas)
        if self.targets_file is None or ids == self._last_ids:
            return
        self._last_ids = ids
        tmp = self.targets_file.with_suffix(self.targets_file.suffix + ".tmp")
        tmp.write_text(json.dumps(self.targets(snap)))
        os.replace(tmp, self.targets_file)  # atomic: Prometheus never reads half a file

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        path = h.path.split("?", 1)[0]
        m = _REPLICA_PATH.match(path)
        body: bytes | None
        if m:
            body = self.metrics_for(int(m.group(1)))
            if body is None:
                return self._send(h, 404, b"replica not running\n", "text/plain; charset=utf-8")
            return self._send(h, 200, body, CONTENT_TYPE)
        if path == "/targets":
            return self._send(h, 200, json.dumps(self.targets()).encode(), "application/json")
        if path == "/truth":
            return self._send(h, 200, json.dumps(self.truth()).encode(), "application/json")
        if path == "/healthz":
            return self._send(h, 200, b"ok\n", "text/plain; charset=utf-8")
        if path == "/":
            ids = [r.replica_id for r in self.driver.snapshot.replicas]
            text = "inference-autoscaler emulator\n" + "".join(f"/replica/{i}/metrics\n" for i in ids)
            return self._send(h, 200, (text + "/targets\n/truth\n").encode(), "text/plain; charset=utf-8")
        return self._send(h, 404, b"not found\n", "text/plain; charset=utf-8")

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str) -> None:
        try:
            h.send_response(status)
            h.send_header("Content-Type", ctype)
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            h.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def start(self) -> None:
        """Serve in a background thread and start the fleet clock."""
        self.driver.start()
        self.sync_targets_file()
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                         name="emulator-http", daemon=True)
        self._thread.start()
        self._files = threading.Thread(target=self._files_loop, name="emulator-targets", daemon=True)
        self._stopped = threading.Event()
        self._files.start()

    def _files_loop(self) -> None:
        while not self._stopped.wait(0.5):
            try:
                self.sync_targets_file()
            except OSError as e:
                log.warning("cannot write targets file %s: %s", self.targets_file, e)

    def stop(self) -> None:
        if self._thread is not None:
            self._stopped.set()
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()
        self.driver.stop()
