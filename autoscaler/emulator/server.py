"""The emulator's HTTP server: every replica's /metrics from one process, on one port.

Routes:
- `GET /replica/<id>/metrics`: replica `<id>`'s exposition (text format 0.0.4), 404 once it is gone.
- `GET /gateway/metrics`: the emulated gateway in front of the replicas: its outstanding requests (held
  ones, while no replica serves, included) as `inference_autoscaler_emulator_gateway_requests`, the count
  a policy's `scaleFromZero.query` reads (docs/scale-from-zero.md).
- `GET /targets`: the live replicas as Prometheus HTTP service discovery (`http_sd_configs`) JSON:
  one target group per replica, with `__metrics_path__`, and `instance` set per replica (all replicas
  share one address, so Prometheus's default `instance` would merge them), plus `namespace`, `pod`; then
  the gateway's (instance `gateway`, no `pod`), listed whether or not a replica runs.
  The same JSON is written to `targets_file` (for `file_sd_configs`) whenever the replica set changes.
- `GET /truth`: the fleet's own totals at the current simulated time (ground truth for tests).
- `GET /healthz`.
- `GET /v1/models`, `POST /v1/completions`, `POST /v1/chat/completions`, `POST /tokenize`: an
  OpenAI-compatible API timed by one more simulated replica (`autoscaler.emulator.openai`), for
  `inference-autoscaler profile`.

Served by `autoscaler.httpserve.BoundedHTTPServer` (one event loop, a fixed handler pool, timeouts, a
connection cap): Prometheus keeps one connection per replica target alive, which costs a socket here,
not a thread. A malformed path (a replica id that is not a small number, a target that is not a path)
answers 400 or 404; nothing a client sends raises in the handler.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from autoscaler.emulator.exposition import CONTENT_TYPE, render, render_gateway
from autoscaler.emulator.fleet_driver import FleetDriver, Snapshot
from autoscaler.emulator.openai import OpenAIEndpoints
from autoscaler.emulator.replica_model import default_replica_model
from autoscaler.httpserve import TEXT, BoundedHTTPServer, Response, text
from autoscaler.strictjson import dumps_strict

log = logging.getLogger("autoscaler.emulator")
# Replica ids are small integers: at most 9 digits (int() of thousands of digits raises, or is slow).
_REPLICA_PATH = re.compile(r"/replica/([0-9]{1,9})/metrics/?")


class EmulatorServer:
    def __init__(self, driver: FleetDriver, *, model: str, engine: str = "vllm", host: str = "127.0.0.1",
                 port: int = 0, namespace: str = "default", targets_file: str | Path | None = None,
                 openai: OpenAIEndpoints | None = None) -> None:
        self.driver = driver
        # OpenAI-compatible API: one more simulated replica (the fleet's serving profile) for `profile`
        self.openai = openai or OpenAIEndpoints(
            default_replica_model(getattr(driver.fleet, "serving", None)), model_name=model, speed=driver.speed)
        self.model = model
        self.engine = engine
        self.namespace = namespace
        self.targets_file = Path(targets_file) if targets_file else None
        self._cache: dict[int, tuple[float, bytes]] = {}
        self._cache_lock = threading.Lock()
        self._created: dict[int, float] = {}
        self._last_ids: tuple[int, ...] | None = None
        # Prometheus (or a scraper) opens many connections at once: a deep backlog, and many may stay open.
        self.httpd = BoundedHTTPServer(host, port, self.handle, workers=8, max_connections=4096, backlog=1024,
                                       name="emulator-http", post_handler=self.openai.handle)
        addr = self.httpd.server_address
        self.host, self.port = str(addr[0]), int(addr[1])
        self._running = False

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
        ] + [{"targets": [f"{self.host}:{self.port}"],
              "labels": {"__metrics_path__": "/gateway/metrics", "instance": "gateway", "namespace": self.namespace}}]

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
        tmp.write_text(dumps_strict(self.targets(snap), indent=None))
        os.replace(tmp, self.targets_file)  # atomic: Prometheus never reads half a file

    def handle(self, target: str) -> Response:
        """The answer to GET `target` (path and query)."""
        path = target.split("?", 1)[0]
        if path.startswith("/replica/"):
            m = _REPLICA_PATH.fullmatch(path)
            if m is None:
                return text(404, "no such replica path: expected /replica/<id>/metrics with a numeric id")
            body = self.metrics_for(int(m.group(1)))
            if body is None:
                return text(404, "replica not running")
            return Response(200, CONTENT_TYPE, body)
        if path == "/gateway/metrics":
            truth = self.driver.snapshot.truth
            return Response(200, CONTENT_TYPE, render_gateway(getattr(truth, "in_flight", 0.0), model=self.model,
                                                              namespace=self.namespace))
        if path == "/targets":
            return Response(200, "application/json", dumps_strict(self.targets(), indent=None).encode())
        if path == "/truth":
            return Response(200, "application/json", dumps_strict(self.truth(), indent=None).encode())
        if path == "/v1/models":
            return self.openai.models()
        if path == "/healthz":
            return text(200, "ok")
        if path == "/":
            ids = [r.replica_id for r in self.driver.snapshot.replicas]
            listing = "inference-autoscaler emulator\n" + "".join(f"/replica/{i}/metrics\n" for i in ids)
            return Response(200, TEXT, (listing + "/gateway/metrics\n/targets\n/truth\n").encode())
        return text(404, "not found")

    def start(self) -> None:
        """Serve in a background thread and start the fleet clock."""
        self.driver.start()
        self.sync_targets_file()
        self.httpd.start()
        self._running = True
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
        if self._running:
            self._stopped.set()
            self._running = False
        self.httpd.shutdown()
        self.driver.stop()
