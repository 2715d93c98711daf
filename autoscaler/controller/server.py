"""HTTP endpoints: `/metrics` (Prometheus text) and `/healthz`, `/readyz` (plain text)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest


def serve(
    port: int, routes: dict[str, Callable[[], tuple[int, str, bytes]]], host: str = "0.0.0.0"
) -> ThreadingHTTPServer:
    """Start a daemon HTTP server; each route returns (status, content type, body)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = routes.get(self.path.split("?", 1)[0])
            code, ctype, body = route() if route else (404, "text/plain", b"not found\n")
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return  # probes every few seconds would flood the log

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name=f"http-{port}", daemon=True).start()
    return server


def metrics_route(registry: Any) -> Callable[[], tuple[int, str, bytes]]:
    return lambda: (200, CONTENT_TYPE_LATEST, generate_latest(registry))


def check_route(check: Callable[[], tuple[bool, str]]) -> Callable[[], tuple[int, str, bytes]]:
    def route() -> tuple[int, str, bytes]:
        ok, why = check()
        return (200 if ok else 503), "text/plain; charset=utf-8", (why + "\n").encode()

    return route
