"""HTTP endpoints: `/metrics` (Prometheus text) and `/healthz`, `/readyz` (plain text).

Served by `autoscaler.httpserve.BoundedHTTPServer`: one event loop for every connection, a small fixed
pool of handler threads, timeouts on reading a request and writing an answer, a cap on open
connections, so a flood of slow or half-open connections cannot hold threads or starve the probes.
`host` is the bind address: the default, every IPv4 interface, is what the kubelet's probes and
Prometheus need (they connect to the pod IP); `--bind-address` narrows it (e.g. `::` for IPv6 pods,
127.0.0.1 for a local run).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from autoscaler.httpserve import BoundedHTTPServer, Response, text

DEFAULT_BIND_ADDRESS = "0.0.0.0"


def serve(
    port: int, routes: dict[str, Callable[[], tuple[int, str, bytes]]], host: str = DEFAULT_BIND_ADDRESS,
    header_timeout_seconds: float = 5.0,
) -> BoundedHTTPServer:
    """Start a daemon HTTP server; each route returns (status, content type, body). The returned server
    has `shutdown()` and `server_address`; a request head must arrive within `header_timeout_seconds`."""

    def handle(target: str) -> Response:
        route = routes.get(target.split("?", 1)[0])
        if route is None:
            return text(404, "not found")
        code, ctype, body = route()
        return Response(code, ctype, body)

    return BoundedHTTPServer(host, port, handle, workers=2, name=f"http-{port}",
                             header_timeout_seconds=header_timeout_seconds).start()


def metrics_route(registry: Any) -> Callable[[], tuple[int, str, bytes]]:
    return lambda: (200, CONTENT_TYPE_LATEST, generate_latest(registry))


def check_route(check: Callable[[], tuple[bool, str]]) -> Callable[[], tuple[int, str, bytes]]:
    def route() -> tuple[int, str, bytes]:
        ok, why = check()
        return (200 if ok else 503), "text/plain; charset=utf-8", (why + "\n").encode()

    return route
