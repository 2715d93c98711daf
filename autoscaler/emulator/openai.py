"""OpenAI-compatible endpoints of the emulator, timed by a simulated replica.

    POST /v1/completions        {"prompt", "max_tokens", "stream", "stream_options": {"include_usage"}}
    POST /v1/chat/completions   {"messages", "max_tokens" | "max_completion_tokens", "stream", ...}
    POST /tokenize              {"prompt"} or {"messages"} -> {"count", "tokens", "max_model_len"}
    GET  /v1/models

Every request runs to `max_tokens` (as with vLLM's `ignore_eos`); the emulator's tokenizer is one token
per whitespace-separated word (a list of token ids as `prompt` counts one per id). Streams are
server-sent events as vLLM sends them: one `data:` event per token, a final usage event when
`stream_options.include_usage` is set, then `data: [DONE]`. Each token is sent when the replica model
(`autoscaler.emulator.replica_model`) says it is out; simulated time runs `speed` times the wall clock.
All handlers run on the HTTP server's event loop (the model is not shared across threads).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from autoscaler.emulator.replica_model import ReplicaModel
from autoscaler.httpserve import Response, StreamResponse

JSON = "application/json"
SSE = "text/event-stream"
MAX_OUTPUT_TOKENS = 16384  # a response is at most this many tokens (bounds the stream)
DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
MAX_POLL_WALL_SECONDS = 0.05  # a stream re-reads the model at least this often


def _error(status: int, message: str) -> Response:
    body = {"object": "error", "message": message, "type": "BadRequestError", "code": status}
    return Response(status, JSON, json.dumps(body).encode())


def count_tokens(prompt: Any) -> int:
    """The emulator's tokenizer: one token per word; a list of ints is already tokens."""
    if isinstance(prompt, str):
        return len(prompt.split())
    if isinstance(prompt, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in prompt):
        return len(prompt)
    raise ValueError("prompt must be a string or a list of token ids")


def _message_tokens(messages: Any) -> int:
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    n = 0
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            n += len(content.split())
        elif isinstance(content, list):  # [{"type": "text", "text": ...}]
            n += sum(len(str(p.get("text", "")).split()) for p in content if isinstance(p, dict))
        else:
            raise ValueError("each message needs a string content")
    return max(1, n)


class OpenAIEndpoints:
    def __init__(self, model: ReplicaModel, *, model_name: str, speed: float = 1.0,
                 max_model_len: int = 131072, clock: Callable[[], float] = time.monotonic) -> None:
        if speed <= 0:
            raise ValueError("speed must be > 0")
        self.model = model
        self.model_name = model_name
        self.speed = speed
        self.max_model_len = max_model_len
        self._clock = clock
        self._start = clock()
        self.created = int(time.time())

    def now(self) -> float:
        """Simulated seconds since the endpoints started."""
        return (self._clock() - self._start) * self.speed

    # ---- GET ------------------------------------------------------------------------------------
    def models(self) -> Response:
        body = {"object": "list", "data": [{
            "id": self.model_name, "object": "model", "created": self.created, "owned_by": "emulator",
            "root": self.model_name, "max_model_len": self.max_model_len}]}
        return Response(200, JSON, json.dumps(body).encode())

    # ---- POST -----------------------------------------------------------------------------------
    async def handle(self, target: str, body: bytes) -> Response | StreamResponse:
        path = target.split("?", 1)[0]
        kind = {"/v1/completions": "text", "/v1/chat/completions": "chat", "/tokenize": "tokenize"}.get(path)
        if kind is None:
            return _error(404, f"no POST route {path[:100]}")
        try:
            req = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return _error(400, "the body is not JSON")
        if not isinstance(req, dict):
            return _error(400, "the body must be a JSON object")
        try:
            if kind == "tokenize":
                n = _message_tokens(req["messages"]) if "messages" in req else count_tokens(req.get("prompt"))
                return Response(200, JSON, json.dumps(
                    {"count": n, "max_model_len": self.max_model_len, "tokens": list(range(n))}).encode())
            prompt_tokens = _message_tokens(req.get("messages")) if kind == "chat" else count_tokens(
                req.get("prompt"))
            out = req.get("max_completion_tokens", req.get("max_tokens")) if kind == "chat" else req.get(
                "max_tokens", DEFAULT_MAX_TOKENS)
            if out is None:
                out = max(1, min(MAX_OUTPUT_TOKENS, self.max_model_len - prompt_tokens))
            if not isinstance(out, int) or isinstance(out, bool) or out < 1:
                raise ValueError("max_tokens must be a positive integer")
        except (KeyError, ValueError) as e:
            return _error(400, str(e).strip("'\""))
        if out > MAX_OUTPUT_TOKENS:
            return _error(400, f"max_tokens ({out}) is over this emulator's limit of {MAX_OUTPUT_TOKENS}")
        if prompt_tokens < 1:
            return _error(400, "the prompt is empty")
        if prompt_tokens + out > self.max_model_len:
            return _error(400, f"prompt ({prompt_tokens}) + max_tokens ({out}) tokens exceed the model's "
                          f"maximum context length of {self.max_model_len}")
        stream = bool(req.get("stream"))
        usage = bool((req.get("stream_options") or {}).get("include_usage")) if stream else True
        rid = self.model.submit(prompt_tokens, out, self.now())
        if stream:
            return StreamResponse(200, SSE, self._events(rid, kind, prompt_tokens, out, usage))
        try:
            async for _ in self._tokens(rid):
                pass
        except BaseException:
            self.model.abort(rid, self.now())
            raise
        return Response(200, JSON, json.dumps(self._whole(kind, prompt_tokens, out)).encode())

    # ---- timing ---------------------------------------------------------------------------------
    async def _tokens(self, rid: int) -> AsyncIterator[int]:
        """Yields how many tokens are out, each time more are, until all are."""
        sent = 0
        while True:
            p = self.model.progress(rid, self.now())
            if p.emitted > sent:
                sent = p.emitted
                yield sent
            if p.done:
                forget = getattr(self.model, "forget", None)
                if forget is not None:
                    forget(rid)
                return
            wait = MAX_POLL_WALL_SECONDS
            if p.next_token_at is not None:
                wait = min(wait, max(0.0, (p.next_token_at - self.now()) / self.speed))
            await asyncio.sleep(wait)

    def _chunk(self, kind: str, rid_text: str, content: str | None, finish: str | None) -> bytes:
        if kind == "chat":
            delta: dict[str, Any] = {} if content is None else {"content": content}
            choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            obj = "chat.completion.chunk"
        else:
            choice = {"index": 0, "text": content or "", "logprobs": None, "finish_reason": finish}
            obj = "text_completion"
        body = {"id": rid_text, "object": obj, "created": self.created, "model": self.model_name,
                "choices": [choice]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    async def _events(self, rid: int, kind: str, prompt_tokens: int, out: int,
                      usage: bool) -> AsyncIterator[bytes]:
        rid_text = f"{'chatcmpl' if kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex}"
        finished = False
        try:
            if kind == "chat":
                role = {"id": rid_text, "object": "chat.completion.chunk", "created": self.created,
                        "model": self.model_name, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                                    "content": ""},
                                                              "logprobs": None, "finish_reason": None}]}
                yield b"data: " + json.dumps(role).encode() + b"\n\n"
            sent = 0
            async for n in self._tokens(rid):
                yield b"".join(self._chunk(kind, rid_text, f" t{k}", None) for k in range(sent, n))
                sent = n
            finished = True
            yield self._chunk(kind, rid_text, None if kind == "chat" else "", "length")
            if usage:
                obj = "chat.completion.chunk" if kind == "chat" else "text_completion"
                u: dict[str, Any] = {"id": rid_text, "object": obj,
                     "created": self.created, "model": self.model_name, "choices": [],
                     "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": out,
                               "total_tokens": prompt_tokens + out}}
                yield b"data: " + json.dumps(u).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"
        finally:
            if not finished:
                self.model.abort(rid, self.now())

    def _whole(self, kind: str, prompt_tokens: int, out: int) -> dict[str, Any]:
        text = "".join(f" t{k}" for k in range(out))
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": out, "total_tokens": prompt_tokens + out}
        if kind == "chat":
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text},
                                      "logprobs": None, "finish_reason": "length"}
            return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": self.created,
                    "model": self.model_name, "choices": [choice], "usage": usage}
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length"}
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": self.created,
                "model": self.model_name, "choices": [choice], "usage": usage}
