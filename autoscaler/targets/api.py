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

__all__ = ["API_ERRORS", "ApiException", "call_json", "is_conflict", "is_not_found", "status_of"]

# What a call to the API server can raise: an HTTP error answer, or no answer at all (connection refused
# or reset while the API server restarts, timeouts). Loops that must survive an outage catch all of it.
API_ERRORS: tuple[type[BaseException], ...] = (ApiException, urllib3.exceptions.HTTPError, OSError)


def call_json(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call a generated client method and return the decoded JSON body."""
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
