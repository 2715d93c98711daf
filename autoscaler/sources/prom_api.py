"""A small, strict client for the Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`).

Every failure is a `SourceError` with a `kind` the telemetry counts; nothing here returns a default.
Queries go as POST form bodies: a batched query for a thousand models is too long for a URL.

An answer is untrusted input: its body is read uncompressed up to `max_bytes` within a total deadline
(a server trickling bytes cannot hold the tick), JSON nested deeper than the parser's recursion limit is
a bad answer (not a RecursionError), every JSON number is read as a float (a 400-digit integer is +Inf,
caught as non-finite, not an OverflowError), and every field is type-checked before use.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from autoscaler.sources.prom_auth import AuthError, PromAuth
from autoscaler.sources.telemetry import ErrorKind

log = logging.getLogger(__name__)


class SourceError(Exception):
    """A failed metrics request. `kind` is one of telemetry.ErrorKind."""

    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: ErrorKind = kind
        self.detail = detail

    def __reduce__(self) -> tuple[type, tuple[ErrorKind, str]]:  # picklable: rebuilt from its fields
        return type(self), (self.kind, self.detail)


@dataclass(frozen=True, slots=True)
class Sample:
    labels: dict[str, str]
    timestamp: float
    value: float  # may be NaN/±Inf: the caller decides what that means for its signal


@dataclass(frozen=True, slots=True)
class Series:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]  # (timestamp, value)


_NUMBER_TYPES = (str, float, int)
# The largest answer read. A parsed JSON answer takes about six times its size in memory, and up to
# `max_parallel_queries` are read at once: 16 MiB holds ~120,000 series (a thousand models' histograms).
DEFAULT_MAX_BYTES = 16 << 20
# Uncompressed answers only: the size cap then bounds what is parsed.
_HEADERS = {"Accept-Encoding": "identity"}


def _short(raw: Any) -> str:
    """A bounded description of an answer's value for an error message (never the repr of a large or
    deeply nested structure, which could be slow or recurse too deep)."""
    if isinstance(raw, str):
        return repr(raw[:40]) + ("..." if len(raw) > 40 else "")
    if isinstance(raw, bool | float) or raw is None:
        return repr(raw)
    if isinstance(raw, int):
        return f"an integer of {raw.bit_length()} bits"
    return f"a {type(raw).__name__}" + (f" of {len(raw)} items" if isinstance(raw, list | dict) else "")


def _text(raw: Any) -> str:
    """A short printable form of an error field (never the repr of a large or deep structure)."""
    return raw[:300] if isinstance(raw, str) else type(raw).__name__ if raw is not None else ""


def _number(raw: Any) -> float:
    # Prometheus encodes values as strings ("1.5", "NaN", "+Inf").
    if type(raw) not in _NUMBER_TYPES:  # exact types, as json.loads makes them (a bool is not a number)
        raise SourceError("bad_payload", f"sample value {_short(raw)} is not a number string")
    if type(raw) is str and len(raw) > 64:  # a float needs at most ~25 characters
        raise SourceError("bad_payload", f"sample value {raw[:40]!r}... is {len(raw)} characters long")
    try:
        return float(raw)
    except (ValueError, OverflowError):  # OverflowError: an int too large for a float
        raise SourceError("bad_payload", f"sample value {_short(raw)} is not a number") from None


def _json(body: bytes) -> Any:
    """`body` parsed, every number a float (so no integer can overflow a float later); ValueError when it
    is not JSON or nests deeper than the parser's recursion limit."""
    try:
        return json.loads(body, parse_int=float)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _point(raw: Any) -> tuple[float, float]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise SourceError("bad_payload", f"sample {_short(raw)} is not [timestamp, value]")
    t = _number(raw[0])
    if not math.isfinite(t):
        raise SourceError("bad_payload", f"sample timestamp {_short(raw[0])} is not finite")
    return t, _number(raw[1])


def _labels(raw: Any) -> dict[str, str]:
    # A plain loop over exact types: a histogram answer for a thousand models has ~50,000 series.
    if type(raw) is not dict:
        raise SourceError("bad_payload", "series 'metric' is not a map of strings")
    for k, v in raw.items():
        if type(k) is not str or type(v) is not str:
            raise SourceError("bad_payload", "series 'metric' is not a map of strings")
    return raw


def answer_data(where: str, status: int, body: bytes) -> dict[str, Any]:
    """The `data` object of a Prometheus API answer (`where` = the URL, for messages), or SourceError.
    Shared with the backtest's client so both report a failed answer the same way."""
    try:
        doc = _json(body)
    except (ValueError, UnicodeDecodeError):
        if status >= 300:
            raise SourceError("http_status", f"{where}: HTTP {status}") from None
        raise SourceError("bad_payload", f"{where}: answer is not JSON") from None
    if not isinstance(doc, dict):
        raise SourceError("bad_payload", f"{where}: answer is not a JSON object")
    if status >= 300 or doc.get("status") != "success":
        kind: ErrorKind = "http_status" if status >= 300 else "bad_payload"
        raise SourceError(kind, f"{where}: HTTP {status} {_text(doc.get('errorType'))}: "
                                f"{_text(doc.get('error'))}")
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise SourceError("bad_payload", f"{where}: no data.result list")
    return data


def file_signature(path: os.PathLike[str] | None) -> tuple[int, int, int, int] | None:
    """What tells a file's new content from its old without reading it (device, inode, size, modification
    time; a ConfigMap's atomic symlink swap gives a new inode), or None when there is no file to read."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class PrometheusAPI:
    """One Prometheus. `timeout_seconds` bounds connect, read and the server-side evaluation;
    `max_bytes` caps a response body."""

    def __init__(self, url: str, *, timeout_seconds: float = 5.0, max_bytes: int = DEFAULT_MAX_BYTES,
                 client: httpx.Client | None = None, auth: PromAuth | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.max_bytes = max_bytes
        self.auth = auth or PromAuth()
        # The whole request (connect, evaluation, reading the body) ends within this many seconds.
        self.deadline_seconds = timeout_seconds * 1.5
        self._timeout = httpx.Timeout(timeout_seconds, connect=min(2.0, timeout_seconds))
        self._owns_client = client is None
        self._ca_seen = file_signature(self.auth.ca_file)
        self._client = client or httpx.Client(timeout=self._timeout, verify=self.auth.verify())
        self._retired: httpx.Client | None = None
        self._swap = threading.Lock()
        self.requests = 0

    def close(self) -> None:
        self._client.close()
        if self._retired is not None:
            self._retired.close()

    def _current(self) -> httpx.Client:
        """The HTTP client, built again when the CA bundle file has changed since it was read: a rotated CA (a
        ConfigMap or Secret updated in place, the service CA renewed) is trusted without a restart. A bundle
        caught half-written keeps the last good one until it reads whole. The client it replaces is closed at
        the next change (requests still in flight on it finish)."""
        ca = self.auth.ca_file
        if ca is None or not self._owns_client:
            return self._client
        seen = file_signature(ca)
        if seen is None or seen == self._ca_seen:
            return self._client
        with self._swap:
            if seen != self._ca_seen:
                try:
                    verify = self.auth.verify()
                except AuthError:
                    return self._client
                old, self._client = self._client, httpx.Client(timeout=self._timeout, verify=verify)
                if self._retired is not None:
                    self._retired.close()
                self._retired, self._ca_seen = old, seen
                log.info("%s changed: Prometheus's certificate is now verified against it", ca)
        return self._client

    def _post(self, path: str, form: dict[str, str]) -> Any:
        form = {**form, "timeout": f"{max(100, int(self.timeout_seconds * 900))}ms"}
        self.requests += 1
        deadline = time.monotonic() + self.deadline_seconds
        try:
            headers = {**_HEADERS, **self.auth.request_headers()}
        except AuthError as e:
            raise SourceError("auth", str(e)) from None
        try:
            with self._current().stream("POST", self.url + path, data=form, headers=headers) as r:
                encoding = r.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    raise SourceError("bad_payload", f"{self.url}{path}: compressed answer ({encoding[:40]})")
                chunks: list[bytes] = []
                size = 0
                for chunk in r.iter_bytes():  # identity (checked above): these are the bytes sent
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise SourceError("too_large", f"{path} answer over {self.max_bytes} bytes")
                    if time.monotonic() > deadline:
                        raise SourceError("timeout", f"{self.url}{path}: answer not read within "
                                                     f"{self.deadline_seconds:g}s")
                    chunks.append(chunk)
                status = r.status_code
        except httpx.TimeoutException as e:
            raise SourceError("timeout", f"{self.url}{path}: {type(e).__name__}") from None
        except httpx.TransportError as e:
            raise SourceError("connect", f"{self.url}{path}: {type(e).__name__}: {e}") from None
        return answer_data(f"{self.url}{path}", status, b"".join(chunks))

    def query(self, promql: str, time: float) -> list[Sample]:
        """An instant query at `time` (unix seconds). Scalars come back as one sample with no labels."""
        data = self._post("/api/v1/query", {"query": promql, "time": f"{time:.3f}"})
        rtype = data.get("resultType")
        result = data["result"]
        if rtype == "scalar":
            t, v = _point(result)
            return [Sample({}, t, v)]
        if rtype != "vector":
            raise SourceError("bad_payload", f"instant query answered {_short(rtype)}, expected a vector")
        out = []
        for item in result:
            if not isinstance(item, dict):
                raise SourceError("bad_payload", "vector item is not an object")
            t, v = _point(item.get("value"))
            out.append(Sample(_labels(item.get("metric", {})), t, v))
        return out

    def query_range(self, promql: str, start: float, end: float, step_seconds: float) -> list[Series]:
        data = self._post("/api/v1/query_range", {
            "query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_seconds:g}",
        })
        if data.get("resultType") != "matrix":
            rtype = data.get("resultType")
            raise SourceError("bad_payload", f"range query answered {_short(rtype)}, expected a matrix")
        out = []
        for item in data["result"]:
            if not isinstance(item, dict) or not isinstance(item.get("values"), list):
                raise SourceError("bad_payload", "matrix item has no values list")
            out.append(Series(_labels(item.get("metric", {})), tuple(_point(p) for p in item["values"])))
        return out
