"""One timed streaming request to an OpenAI-compatible server (`/v1/completions` or `/v1/chat/completions`).

Measured on the client's clock: TTFT = first event with non-empty content; end-to-end = `[DONE]` (or the
stream's end); mean inter-token latency = (e2e − TTFT) / (output tokens − 1). Token counts come from the
final usage event (`stream_options.include_usage`); without one, prompt tokens are unknown and output
tokens are the content events counted (one per token in vLLM's streams). Every request has a deadline and
a response size cap; failures are results (with a one-line error), never exceptions.
"""

from __future__ import annotations

import asyncio
import json as json_module
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from autoscaler.profile.sse import SSEError, SSEParser, read_event

Api = Literal["completions", "chat"]
PATHS: dict[str, str] = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str
    model: str
    api: Api = "completions"
    timeout_seconds: float = 60.0  # whole request, wall clock
    max_response_bytes: int = 8 << 20
    vllm_hints: bool = True  # ignore_eos + min_tokens: every request generates exactly max_tokens


@dataclass(frozen=True, slots=True)
class Result:
    sent_at: float  # client clock, seconds
    ok: bool
    error: str | None = None
    ttft: float | None = None
    e2e: float | None = None
    itl: float | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    usage_reported: bool = False


def payload(ep: Endpoint, prompt: str, max_tokens: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": ep.model, "max_tokens": max_tokens, "stream": True,
                            "stream_options": {"include_usage": True}, "temperature": 0.0}
    if ep.api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if ep.vllm_hints:
        body["ignore_eos"] = True
        body["min_tokens"] = max_tokens
    return body


async def timed_request(client: httpx.AsyncClient, ep: Endpoint, prompt: str, max_tokens: int,
                        clock: Callable[[], float] = time.perf_counter,
                        on_first_token: Callable[[], None] | None = None) -> Result:
    t0 = clock()
    try:
        return await asyncio.wait_for(
            _stream(client, ep, payload(ep, prompt, max_tokens), t0, clock, on_first_token), ep.timeout_seconds)
    except (TimeoutError, asyncio.TimeoutError):
        return Result(t0, False, f"no complete answer within {ep.timeout_seconds:g} s")
    except httpx.HTTPError as e:
        return Result(t0, False, f"{type(e).__name__}: {str(e)[:200]}")
    except SSEError as e:
        return Result(t0, False, str(e))


async def _stream(client: httpx.AsyncClient, ep: Endpoint, body: dict[str, Any], t0: float,
                  clock: Callable[[], float], on_first_token: Callable[[], None] | None) -> Result:
    ttft: float | None = None
    events = 0
    prompt_tokens = completion_tokens = None
    received = 0
    done = False
    parser = SSEParser(max_line_bytes=min(ep.max_response_bytes, 1 << 20))
    async with client.stream("POST", ep.base_url.rstrip("/") + PATHS[ep.api], json=body) as resp:
        if resp.status_code != 200:
            head = b""
            async for chunk in resp.aiter_bytes():
                head += chunk
                if len(head) > 1024:
                    break
            return Result(t0, False, f"HTTP {resp.status_code}: {head[:300].decode('utf-8', 'replace')}")
        async for chunk in resp.aiter_raw():
            received += len(chunk)
            if received > ep.max_response_bytes:
                return Result(t0, False, f"response over {ep.max_response_bytes} bytes")
            now = clock()
            for data in parser.feed(chunk):
                ev = read_event(data)
                if ev.done:
                    done = True
                    break
                if ev.content:
                    events += 1
                    if ttft is None:
                        ttft = now - t0
                        if on_first_token is not None:
                            on_first_token()
                if ev.prompt_tokens is not None:
                    prompt_tokens = ev.prompt_tokens
                if ev.completion_tokens is not None:
                    completion_tokens = ev.completion_tokens
            if done:
                break
        if not done:
            for data in parser.close():
                ev = read_event(data)
                if ev.done:
                    done = True
    end = clock()
    if not done:
        return Result(t0, False, "the stream ended without [DONE]")
    if ttft is None:
        return Result(t0, False, "no content token in the stream")
    usage = completion_tokens is not None
    out = completion_tokens if completion_tokens is not None else events
    e2e = end - t0
    itl = (e2e - ttft) / (out - 1) if out > 1 else None
    return Result(t0, True, None, ttft, e2e, itl, prompt_tokens, out, usage)


# What `/tokenize` and `/v1/models` may answer: a count, or a list of models; far below this.
SMALL_BODY = 1 << 20
SMALL_TIMEOUT = 10.0  # seconds for the whole call


async def small_json(client: httpx.AsyncClient, method: str, url: str, *, json: Any = None,
                     limit: int = SMALL_BODY) -> Any:
    """The JSON body of a 200 answer, read to at most `limit` bytes (None past it, or on any other status);
    10 s for the whole call. The body is streamed, so a server that sends more is cut off, not buffered."""
    return await asyncio.wait_for(_read_small(client, method, url, json, limit), SMALL_TIMEOUT)


async def _read_small(client: httpx.AsyncClient, method: str, url: str, json: Any, limit: int) -> Any:
    async with client.stream(method, url, json=json, timeout=SMALL_TIMEOUT) as r:
        if r.status_code != 200:
            return None
        body = bytearray()
        async for chunk in r.aiter_bytes():
            body += chunk
            if len(body) > limit:
                return None
    return json_module.loads(body)


async def tokens_per_word(client: httpx.AsyncClient, base_url: str, model: str, sample: str) -> float | None:
    """Tokens per word of `sample` from vLLM's `/tokenize`, or None when the server has none."""
    try:
        obj = await small_json(client, "POST", base_url.rstrip("/") + "/tokenize",
                               json={"model": model, "prompt": sample})
    except (httpx.HTTPError, ValueError, TimeoutError, asyncio.TimeoutError):
        return None
    count = obj.get("count") if isinstance(obj, dict) else None
    if not isinstance(count, int) or count <= 0:
        return None
    return count / max(1, len(sample.split()))


async def served_model(client: httpx.AsyncClient, base_url: str) -> str | None:
    """The first model `/v1/models` lists (None if it lists none or cannot be read)."""
    try:
        obj = await small_json(client, "GET", base_url.rstrip("/") + "/v1/models")
    except (httpx.HTTPError, ValueError, TimeoutError, asyncio.TimeoutError):
        return None
    data = obj.get("data") if isinstance(obj, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict) and isinstance(data[0].get("id"), str):
        return str(data[0]["id"])
    return None
