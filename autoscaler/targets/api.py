"""Raw JSON calls through the official client: dicts in, dicts out, no model deserialization.

Deserializing into the generated models costs more than the request for large lists, and the
controller works on plain dicts anyway.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.client.rest import ApiException

__all__ = [
    "API_ERRORS",
    "ApiException",
    "bound_retries",
    "call_json",
    "is_conflict",
    "is_not_found",
    "request_timeout",
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


def call_json(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call a generated client method and return the decoded JSON body. Every call has a timeout."""
    kwargs.setdefault("_request_timeout", _timeout)
    resp = fn(*args, _preload_content=False, **kwargs)
    try:
        data = resp.data
    finally:
        resp.release_conn()
    return json.loads(data) if data else {}


def status_of(err: BaseException) -> int | None:
    return err.status if isinstance(err, ApiException) else None


def is_not_found(err: BaseException) -> bool:
    return status_of(err) == 404


def is_conflict(err: BaseException) -> bool:
    return status_of(err) == 409
