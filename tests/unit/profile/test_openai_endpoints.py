"""The emulator's OpenAI-compatible API over the real HTTP server: formats vLLM clients parse, timing from
the replica model, and bounded POST handling in httpserve."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import httpx
import numpy as np
import pytest

from autoscaler.emulator.build import build_emulator
from autoscaler.emulator.fleet_driver import fixed_replicas
from autoscaler.httpserve import BoundedHTTPServer, text
from autoscaler.profile.client import Api, Endpoint, timed_request
from simulations.profiles import ServingProfile
from simulations.trace import Trace

SPEED = 4.0
SERVING = ServingProfile(prefill_tokens_per_second=1000, itl_base_seconds=0.02, itl_per_sequence_seconds=0.0)


@pytest.fixture(scope="module")
def server():
    srv = build_emulator(Trace("idle", np.array([0.0]), np.array([1]), np.array([1]), 0.0), fixed_replicas(1),
                         serving=SERVING, speed=SPEED, model="m")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def url(server) -> str:
    return str(server.base_url)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_streams_are_timed_by_the_replica(url: str, api: Api) -> None:
    async def go():
        async with httpx.AsyncClient() as c:
            return [await timed_request(c, Endpoint(url, "m", api, timeout_seconds=10), "w " * 400, 20)
                    for _ in range(3)]

    runs = asyncio.run(go())
    for r in runs:
        assert r.ok, r.error
        assert (r.prompt_tokens, r.output_tokens, r.usage_reported) == (400, 20, True)
        assert r.ttft is not None and r.itl is not None
    # 400 tokens at 1000/s = 0.4 s of prefill, then 20 ms per token, in replica seconds. A busy machine only
    # adds wall-clock delay (one CI run saw +0.33 s on one request), so the fastest of three is the replica's.
    assert min(r.ttft or 0.0 for r in runs) * SPEED == pytest.approx(0.4, abs=0.15)
    assert min(r.itl or 0.0 for r in runs) * SPEED == pytest.approx(0.02, abs=0.01)


def test_whole_answers_models_and_tokenize(url: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json={
        "model": "m", "messages": [{"role": "user", "content": "a b c"}], "max_tokens": 4}, timeout=10)
    body = r.json()
    assert r.status_code == 200 and body["object"] == "chat.completion"
    assert body["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    assert len(body["choices"][0]["message"]["content"].split()) == 4
    assert httpx.get(url + "/v1/models").json()["data"][0]["id"] == "m"
    assert httpx.post(url + "/tokenize", json={"prompt": "x y z"}).json()["count"] == 3
    ids = httpx.post(url + "/v1/completions", json={"prompt": [1, 2, 3, 4], "max_tokens": 1}, timeout=10)
    assert ids.json()["usage"]["prompt_tokens"] == 4


@pytest.mark.parametrize("path,body,status,why", [
    ("/v1/completions", b"{nope", 400, "not JSON"),
    ("/v1/completions", json.dumps({"prompt": "a", "max_tokens": 0}).encode(), 400, "max_tokens"),
    ("/v1/completions", json.dumps({"prompt": "a", "max_tokens": 10**6}).encode(), 400, "limit"),
    ("/v1/completions", json.dumps({"prompt": "", "max_tokens": 1}).encode(), 400, "empty"),
    ("/v1/chat/completions", json.dumps({"messages": [], "max_tokens": 1}).encode(), 400, "messages"),
    ("/v1/embeddings", b"{}", 404, "no POST route"),
])
def test_bad_requests_get_one_line_errors(url: str, path: str, body: bytes, status: int, why: str) -> None:
    r = httpx.post(url + path, content=body, headers={"content-type": "application/json"})
    assert r.status_code == status and why in r.json()["message"]


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request)
        return s.recv(4096)


def test_post_bodies_are_bounded_and_get_only_servers_refuse_them(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    big = _raw(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
    assert big.startswith(b"HTTP/1.1 413")
    chunked = _raw(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 411")
    get_only = BoundedHTTPServer("127.0.0.1", 0, lambda t: text(200, "ok")).start()
    try:
        r = _raw(get_only.server_address[1], b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        assert r.startswith(b"HTTP/1.1 405")
    finally:
        get_only.shutdown()


def test_a_client_that_leaves_mid_stream_frees_the_replica(server) -> None:
    model = server.openai.model
    with httpx.stream("POST", server.base_url + "/v1/completions",
                      json={"prompt": "a", "max_tokens": 5000, "stream": True}, timeout=10) as r:
        for line in r.iter_lines():
            if line.startswith("data:"):
                break
        assert model.engine.running == 1  # 5000 tokens at 20 ms a step: still running for a long while
    # the emulator notices the closed socket on its next write and aborts the request (as vLLM does)
    deadline = time.monotonic() + 5
    while model.engine.busy_with_work() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not model.engine.busy_with_work() and model.engine.used_blocks() == 0
