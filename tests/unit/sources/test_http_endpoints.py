"""The HTTP endpoints (controller /metrics and probes, the emulator's pages) under hostile clients: a flood
of half-open connections holds no threads and does not starve the probes, slow clients are cut off,
malformed requests and paths get 4xx answers, a failing handler gets a 500 and the server goes on."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from autoscaler.controller.server import check_route, serve
from autoscaler.httpserve import BoundedHTTPServer, Response, text


def request(port: int, raw: bytes, host: str = "127.0.0.1", timeout: float = 5.0) -> bytes:
    """Send `raw`, read until the server closes (or `timeout`)."""
    with socket.create_connection((host, port), timeout=timeout) as c:
        c.sendall(raw)
        out = b""
        while True:
            try:
                chunk = c.recv(65536)
            except (TimeoutError, ConnectionResetError):  # an aborted connection is reset
                break
            if not chunk:
                break
            out += chunk
        return out


def get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, bytes]:
    resp = request(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(), host)
    head, _, body = resp.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def test_600_half_open_connections_hold_no_threads_and_the_probes_still_answer() -> None:
    before = threading.active_count()
    # A header timeout longer than opening 600 connections can take on a loaded 2-core machine (the default
    # 5 s would cut the first ones off while the last are still being opened: not what is tested here).
    server = serve(0, {"/healthz": check_route(lambda: (True, "ok"))}, host="127.0.0.1", header_timeout_seconds=120)
    port = server.server_address[1]
    socks = []
    try:
        for _ in range(600):
            c = socket.create_connection(("127.0.0.1", port))
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
            socks.append(c)
        deadline = time.monotonic() + 30
        while server.open_connections < 600 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.open_connections == 600
        t0 = time.monotonic()
        assert get(port, "/healthz") == (200, b"ok\n")
        assert time.monotonic() - t0 < 1.0
        assert threading.active_count() <= before + 3  # the loop thread and at most two handler threads
    finally:
        for c in socks:
            c.close()
        server.shutdown()


def test_slow_and_half_open_clients_are_cut_off_by_the_header_timeout() -> None:
    server = BoundedHTTPServer("127.0.0.1", 0, lambda t: text(200, "ok"), header_timeout_seconds=0.3).start()
    port = server.server_address[1]
    try:
        t0 = time.monotonic()
        assert request(port, b"GET / HTTP/1.1\r\nHost: x\r\n") == b""  # closed without an answer
        assert 0.25 < time.monotonic() - t0 < 2.0
        deadline = time.monotonic() + 2
        while server.open_connections and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.open_connections == 0
    finally:
        server.shutdown()


def test_connections_over_the_cap_are_closed_at_once() -> None:
    server = BoundedHTTPServer("127.0.0.1", 0, lambda t: text(200, "ok"), max_connections=5).start()
    port = server.server_address[1]
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
    try:
        deadline = time.monotonic() + 5
        while server.open_connections < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert request(port, b"GET / HTTP/1.1\r\n\r\n", timeout=2) == b""
        assert server.refused_connections == 1
        for c in held:
            c.close()
        deadline = time.monotonic() + 5
        while server.open_connections and time.monotonic() < deadline:
            time.sleep(0.02)
        assert get(port, "/")[0] == 200
    finally:
        server.shutdown()


@pytest.mark.parametrize("raw, status", [
    (b"POST / HTTP/1.1\r\n\r\n", 405),
    (b"GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 400),
    (b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    (b"GET http://evil/ HTTP/1.1\r\n\r\n", 400),
    (b"GET * HTTP/1.1\r\n\r\n", 400),
    (b"garbage\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400),
    (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n", 431),
])
def test_malformed_requests_get_a_4xx_answer(raw: bytes, status: int) -> None:
    server = BoundedHTTPServer("127.0.0.1", 0, lambda t: text(200, "ok")).start()
    try:
        resp = request(server.server_address[1], raw)
        assert resp.startswith(f"HTTP/1.1 {status} ".encode())
    finally:
        server.shutdown()


def test_a_failing_handler_answers_500_and_the_server_goes_on() -> None:
    def handler(target: str) -> Response:
        if target == "/boom":
            raise RuntimeError("bug")
        return text(200, "fine")

    server = BoundedHTTPServer("127.0.0.1", 0, handler).start()
    port = server.server_address[1]
    try:
        assert get(port, "/boom")[0] == 500
        assert get(port, "/ok") == (200, b"fine\n")
    finally:
        server.shutdown()


def test_keep_alive_and_head() -> None:
    server = BoundedHTTPServer("127.0.0.1", 0, lambda t: text(200, t)).start()
    try:
        two = b"GET /a HTTP/1.1\r\n\r\nHEAD /b HTTP/1.1\r\nConnection: close\r\n\r\n"
        resp = request(server.server_address[1], two)
        first, second = resp.split(b"HTTP/1.1 200 OK", 2)[1:]
        assert first.endswith(b"\r\n\r\n/a\n") and second.endswith(b"Content-Length: 3\r\nConnection: close\r\n\r\n")
    finally:
        server.shutdown()


def test_the_bind_address_is_honoured() -> None:
    server = serve(0, {"/healthz": check_route(lambda: (True, "ok"))}, host="127.0.0.1")
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert get(server.server_address[1], "/healthz")[0] == 200
        assert get(server.server_address[1], "/nope")[0] == 404
    finally:
        server.shutdown()
    if socket.has_ipv6:
        try:
            v6 = serve(0, {"/healthz": check_route(lambda: (True, "ok"))}, host="::1")
        except OSError:
            pytest.skip("no IPv6 loopback here")
        try:
            assert get(v6.server_address[1], "/healthz", host="::1")[0] == 200
        finally:
            v6.shutdown()


@pytest.fixture
def emulator(tmp_path):
    from .test_emulator import make_server

    server, _clock, _ = make_server(tmp_path, replicas=1)
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("path, status", [
    ("/replica/" + "9" * 4300 + "/metrics", 404),
    ("/replica/" + "1" * 5000, 404),
    ("/replica/abc/metrics", 404),
    ("/replica/-1/metrics", 404),
    ("/replica//metrics", 404),
    ("/replica/99999/metrics", 404),
    ("/replica/0/metrics/../../etc", 404),
    ("/%00", 404),
])
def test_the_emulator_answers_malformed_paths_with_4xx(emulator, path: str, status: int) -> None:
    port = emulator.port
    assert get(port, "/replica/0/metrics")[0] == 200
    assert get(port, path)[0] == status
    assert get(port, "/healthz")[0] == 200  # and keeps serving
