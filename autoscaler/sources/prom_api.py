"""A small, strict client for the Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`).

Every failure is a `SourceError` with a `kind` the telemetry counts; nothing here returns a default.
Queries go as POST form bodies: a batched query for a thousand models is too long for a URL.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import httpx

from autoscaler.sources.telemetry import ErrorKind


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


def _number(raw: Any) -> float:
    # Prometheus encodes values as strings ("1.5", "NaN", "+Inf").
    if type(raw) not in _NUMBER_TYPES:  # exact types, as json.loads makes them (a bool is not a number)
        raise SourceError("bad_payload", f"sample value {raw!r} is not a number string")
    try:
        return float(raw)
    except ValueError:
        raise SourceError("bad_payload", f"sample value {raw!r} is not a number") from None


def _point(raw: Any) -> tuple[float, float]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise SourceError("bad_payload", f"sample {raw!r} is not [timestamp, value]")
    t = _number(raw[0])
    if not math.isfinite(t):
        raise SourceError("bad_payload", f"sample timestamp {raw[0]!r} is not finite")
    return t, _number(raw[1])


def _labels(raw: Any) -> dict[str, str]:
    # A plain loop over exact types: a histogram answer for a thousand models has ~50,000 series.
    if type(raw) is not dict:
        raise SourceError("bad_payload", "series 'metric' is not a map of strings")
    for k, v in raw.items():
        if type(k) is not str or type(v) is not str:
            raise SourceError("bad_payload", "series 'metric' is not a map of strings")
    return raw


class PrometheusAPI:
    """One Prometheus. `timeout_seconds` bounds connect, read and the server-side evaluation;
    `max_bytes` caps a response body."""

    def __init__(self, url: str, *, timeout_seconds: float = 5.0, max_bytes: int = 64 << 20,
                 client: httpx.Client | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.max_bytes = max_bytes
        timeout = httpx.Timeout(timeout_seconds, connect=min(2.0, timeout_seconds))
        self._client = client or httpx.Client(timeout=timeout)
        self.requests = 0

    def close(self) -> None:
        self._client.close()

    def _post(self, path: str, form: dict[str, str]) -> Any:
        form = {**form, "timeout": f"{max(100, int(self.timeout_seconds * 900))}ms"}
        self.requests += 1
        try:
            with self._client.stream("POST", self.url + path, data=form) as r:
                chunks: list[bytes] = []
                size = 0
                for chunk in r.iter_bytes():
                    size += len(chunk)
                    if size > self.max_bytes:
                        raise SourceError("too_large", f"{path} answer over {self.max_bytes} bytes")
                    chunks.append(chunk)
                status = r.status_code
        except httpx.TimeoutException as e:
            raise SourceError("timeout", f"{self.url}{path}: {type(e).__name__}") from None
        except httpx.TransportError as e:
            raise SourceError("connect", f"{self.url}{path}: {type(e).__name__}: {e}") from None
        body = b"".join(chunks)
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            if status >= 300:
                raise SourceError("http_status", f"{self.url}{path}: HTTP {status}") from None
            raise SourceError("bad_payload", f"{self.url}{path}: answer is not JSON") from None
        if not isinstance(doc, dict):
            raise SourceError("bad_payload", f"{self.url}{path}: answer is not a JSON object")
        if status >= 300 or doc.get("status") != "success":
            kind: ErrorKind = "http_status" if status >= 300 else "bad_payload"
            raise SourceError(kind, f"{self.url}{path}: HTTP {status} {doc.get('errorType', '')}: "
                                    f"{str(doc.get('error', ''))[:300]}")
        data = doc.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("result"), list):
            raise SourceError("bad_payload", f"{self.url}{path}: no data.result list")
        return data

    def query(self, promql: str, time: float) -> list[Sample]:
        """An instant query at `time` (unix seconds). Scalars come back as one sample with no labels."""
        data = self._post("/api/v1/query", {"query": promql, "time": f"{time:.3f}"})
        rtype = data.get("resultType")
        result = data["result"]
        if rtype == "scalar":
            t, v = _point(result)
            return [Sample({}, t, v)]
        if rtype != "vector":
            raise SourceError("bad_payload", f"instant query answered {rtype!r}, expected a vector")
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
            raise SourceError("bad_payload", f"range query answered {rtype!r}, expected a matrix")
        out = []
        for item in data["result"]:
            if not isinstance(item, dict) or not isinstance(item.get("values"), list):
                raise SourceError("bad_payload", "matrix item has no values list")
            out.append(Series(_labels(item.get("metric", {})), tuple(_point(p) for p in item["values"])))
        return out
