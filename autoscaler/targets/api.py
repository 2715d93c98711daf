"""Raw JSON calls through the official client: dicts in, dicts out, no model deserialization.

Deserializing into the generated models costs more than the request for large lists, and the
controller works on plain dicts anyway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import urllib3
from kubernetes.client.rest import ApiException

__all__ = [
    "API_ERRORS",
    "ApiException",
    "ResponseTooLarge",
    "bound_retries",
    "call_json",
    "is_conflict",
    "is_not_found",
    "iter_lines_bounded",
    "max_response_bytes",
    "request_timeout",
    "set_max_response_bytes",
    "set_request_timeout",
    "status_of",
]

# What a call to the API server can raise: an HTTP error answer, or no answer at all (connection refused
# or reset while the API server restarts, timeouts). Loops that must survive an outage catch all of it.
API_ERRORS: tuple[type[BaseException], ...] = (ApiException, urllib3.exceptions.HTTPError, OSError)


# (connect, read) seconds for every call that does not pass its own `_request_timeout`: without one, the
# client waits forever on an API server that accepts the connection and never answers, and the tick with it.
_timeout: tuple[float, float] = (5.0, 10.0)


def set_request_timeout(connect_seconds: float, read_seconds: float) -> None:
    global _timeout
    if not (0 < connect_seconds <= 600 and 0 < read_seconds <= 600):
        raise ValueError("API request timeouts must be within (0, 600] seconds")
    _timeout = (float(connect_seconds), float(read_seconds))


def request_timeout() -> tuple[float, float]:
    return _timeout


def bound_retries(api_client: Any) -> None:
    """No retry after a read timeout. urllib3 retries an idempotent request 3 times by default, so one
    API server that never answers would cost 4 timeouts per call; a refused connection is still retried."""
    pool_manager = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if pool_manager is None:
        return
    pool_manager.connection_pool_kw["retries"] = urllib3.Retry(total=3, connect=3, read=0, status=0, redirect=3)
    pool_manager.clear()  # pools made before this keep their own settings


# Bytes one API answer may hold. A list of 10,000 pods is ~50 MB of JSON; an answer past this is a broken
# or hostile server, and reading it whole would take the controller's memory with it.
_max_response_bytes = 256 * 1024 * 1024
_CHUNK = 1 << 16


class ResponseTooLarge(urllib3.exceptions.HTTPError):
    """The API server's answer was larger than the controller reads (one of API_ERRORS: the loop survives)."""


def set_max_response_bytes(limit: int) -> None:
    global _max_response_bytes
    if not 1024 <= limit <= 1 << 34:
        raise ValueError("the API response limit must be within [1 KiB, 16 GiB]")
    _max_response_bytes = int(limit)


def max_response_bytes() -> int:
    return _max_response_bytes


def _read_bounded(resp: Any, limit: int) -> bytes:
    """The body, read in chunks, refused as soon as it passes `limit` bytes (or says it will)."""
    length = (getattr(resp, "headers", None) or {}).get("Content-Length")
    if length is not None and str(length).isdigit() and int(length) > limit:
        raise ResponseTooLarge(f"API answer of {int(length)} bytes is over the {limit}-byte limit")
    read = getattr(resp, "read", None)
    if read is None:  # a body already in memory
        data = resp.data or b""
        if len(data) > limit:
            raise ResponseTooLarge(f"API answer of {len(data)} bytes is over the {limit}-byte limit")
        return bytes(data)
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = read(_CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise ResponseTooLarge(f"API answer over the {limit}-byte limit (read {total} bytes)")
        chunks.append(chunk)


def iter_lines_bounded(resp: Any, limit: int | None = None) -> Iterator[str]:
    """A watch stream's lines (one event each), like the client's `iter_resp_lines`, but one line may not
    pass `limit` bytes (default: the API response limit): a server that never ends a line cannot fill the
    controller's memory."""
    limit = _max_response_bytes if limit is None else limit
    buffer = bytearray()
    for segment in resp.stream(amt=_CHUNK, decode_content=False):
        buffer.extend(segment.encode("utf-8") if isinstance(segment, str) else segment)
        start = 0
        while (end := buffer.find(b"\n", start)) != -1:
            yield buffer[start:end].decode("utf-8", errors="replace")
            start = end + 1
        del buffer[:start]
        if len(buffer) > limit:
            raise ResponseTooLarge(f"watch event over the {limit}-byte limit")
    # A line the server did not end (the stream was cut) is no whole event: dropped, as the client does.


def call_json(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call a generated client method and return the decoded JSON body. Every call has a timeout and a
    size limit (`set_max_response_bytes`)."""
    kwargs.setdefault("_request_timeout", _timeout)
    resp = fn(*args, _preload_content=False, **kwargs)
    try:
        data = _read_bounded(resp, _max_response_bytes)
    finally:
        resp.release_conn()
    return json.loads(data) if data else {}


def status_of(err: BaseException) -> int | None:
    return err.status if isinstance(err, ApiException) else None


def error_code(err: BaseException) -> str:
    """The HTTP status of an API error, else the exception's type: the `code` label of the error counters."""
    return str(err.status) if isinstance(err, ApiException) else type(err).__name__


def describe_error(err: BaseException) -> str:
    """One line for a log, a condition or an event: `HTTP 409 Conflict`, or `Type: message`."""
    if isinstance(err, ApiException):
        return f"HTTP {err.status} {err.reason or ''}".strip()
    return f"{type(err).__name__}: {err}"


def is_not_found(err: BaseException) -> bool:
    return status_of(err) == 404


def is_conflict(err: BaseException) -> bool:
    return status_of(err) == 409
