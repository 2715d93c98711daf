"""One timed request against scripted servers (httpx.MockTransport): what is measured, and every way a
stream can fail becoming a result with a one-line error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from autoscaler.profile.client import (
    SMALL_BODY,
    Endpoint,
    Result,
    payload,
    served_model,
    timed_request,
    tokens_per_word,
)


class _Body(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes], delay: float = 0.0) -> None:
        self.chunks, self.delay = chunks, delay

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for c in self.chunks:
            if self.delay:
                await asyncio.sleep(self.delay)
            yield c


def ev(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def token(t: str) -> bytes:
    return ev({"choices": [{"index": 0, "text": t, "finish_reason": None}]})


USAGE = ev({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}})
DONE = b"data: [DONE]\n\n"


def run(chunks: list[bytes], status: int = 200, ep: Endpoint | None = None, delay: float = 0.0) -> Result:
    seen: list[dict] = []

    def handler(req: httpx.Request) -> httpx.Response:
        seen.append(json.loads(req.content))
        return httpx.Response(status, stream=_Body(chunks, delay))

    async def go() -> Result:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as c:
            return await timed_request(c, ep or Endpoint("http://x", "m"), "a b c", 3)

    return asyncio.run(go())


def test_a_full_stream_is_measured_with_usage() -> None:
    r = run([token(" a"), token(" b") + token(" c"), USAGE, DONE])
    assert r.ok and r.usage_reported and (r.prompt_tokens, r.output_tokens) == (12, 3)
    assert r.ttft is not None and r.e2e is not None and 0 <= r.ttft <= r.e2e
    assert r.itl == pytest.approx((r.e2e - r.ttft) / 2)


def test_without_usage_output_tokens_are_the_content_events() -> None:
    r = run([ev({"choices": [{"delta": {"role": "assistant", "content": ""}}]}), token(" a"), token(" b"), DONE])
    assert r.ok and not r.usage_reported
    assert r.prompt_tokens is None and r.output_tokens == 2


def test_ttft_is_the_first_content_not_the_first_event() -> None:
    r = run([ev({"choices": [{"delta": {"role": "assistant", "content": ""}}]}), token(" a"), USAGE, DONE],
            delay=0.05)
    assert r.ok and r.ttft is not None and r.ttft >= 0.09  # the role event (first chunk) does not count


@pytest.mark.parametrize("chunks,why", [
    ([token(" a"), USAGE], "without [DONE]"),
    ([USAGE, DONE], "no content token"),
    ([token(" a"), b"data: {oops\n\n", DONE], "not JSON"),
    ([token(" a"), ev({"error": {"message": "engine died"}})], "engine died"),
    ([b"data: " + b"x" * 5000], "over"),
])
def test_broken_streams_are_failed_results(chunks: list[bytes], why: str) -> None:
    r = run(chunks, ep=Endpoint("http://x", "m", max_response_bytes=4096))
    assert not r.ok and r.error is not None and why in r.error and "\n" not in r.error


def test_http_errors_and_timeouts_are_failed_results() -> None:
    r = run([b'{"message": "model not found"}'], status=404)
    assert not r.ok and r.error is not None and r.error.startswith("HTTP 404") and "model not found" in r.error
    slow = run([token(" a")] * 10 + [DONE], ep=Endpoint("http://x", "m", timeout_seconds=0.2), delay=0.05)
    assert not slow.ok and slow.error is not None and "within 0.2 s" in slow.error


def test_the_request_asks_for_usage_and_exact_lengths() -> None:
    body = payload(Endpoint("http://x", "m", api="chat"), "hi", 7)
    assert body["messages"] == [{"role": "user", "content": "hi"}] and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == body["min_tokens"] == 7 and body["ignore_eos"] is True
    plain = payload(Endpoint("http://x", "m", vllm_hints=False), "hi", 7)
    assert plain["prompt"] == "hi" and "ignore_eos" not in plain and "min_tokens" not in plain


class _Endless(httpx.AsyncByteStream):
    """A body that never ends: 64 KiB chunks, counted as they are taken."""

    def __init__(self, chunk: bytes) -> None:
        self.chunk, self.sent = chunk, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self.sent += 1
            yield self.chunk


def _ask(answer: Callable[[], httpx.Response]) -> tuple[str | None, float | None]:
    async def go() -> tuple[str | None, float | None]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(lambda _req: answer())) as c:
            return await served_model(c, "http://x"), await tokens_per_word(c, "http://x", "m", "a b c d")

    return asyncio.run(go())


def test_model_and_tokenizer_answers_are_read() -> None:
    both = {"data": [{"id": "llama"}], "count": 6}
    assert _ask(lambda: httpx.Response(200, json=both)) == ("llama", 1.5)
    assert _ask(lambda: httpx.Response(404, json=both)) == (None, None)
    assert _ask(lambda: httpx.Response(200, content=b"not json")) == (None, None)
    assert _ask(lambda: httpx.Response(200, json={"data": "x", "count": -1})) == (None, None)


def test_an_endless_answer_is_cut_off_at_the_size_limit() -> None:
    """/v1/models and /tokenize used to read the whole body before checking its size."""
    bodies: list[_Endless] = []

    def endless() -> httpx.Response:
        bodies.append(_Endless(b" " * 65536))
        return httpx.Response(200, stream=bodies[-1])

    assert _ask(endless) == (None, None)
    # Each call stops past SMALL_BODY (1 MiB = 16 chunks of 64 KiB), within a chunk or two.
    assert len(bodies) == 2 and all(b.sent <= SMALL_BODY // 65536 + 2 for b in bodies), [b.sent for b in bodies]


def test_a_silent_server_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("autoscaler.profile.client.SMALL_TIMEOUT", 0.2)  # the 10-s bound, shortened

    async def never(_req: httpx.Request) -> httpx.Response:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def go() -> object:
        async with httpx.AsyncClient(transport=httpx.MockTransport(never)) as c:
            return await asyncio.wait_for(served_model(c, "http://x"), 30)

    assert asyncio.run(go()) is None
