"""Prometheus range queries for the backtest, through prometheus-api-client, answered as pandas frames.

The backtest is an operator-run command that reads hours to weeks of history once, so it uses the
library's synchronous `PrometheusConnect.custom_query_range` and `MetricRangeDataFrame` (one row per
sample: the series' labels, a float `value`, indexed by timestamp). It keeps the controller's bounds and
words (`autoscaler.sources.prom_api`): one attempt per request (no retries), connect ≤ 2 s and read ≤
`timeout_seconds`, the same server-side evaluation timeout, a body capped at `max_bytes`, and every
failure a `SourceError` with the same kind and message. A range is cut into windows of at most
`MAX_POINTS` steps, under Prometheus's own limit of 11,000 points per series, so one answer stays small.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import requests
from prometheus_api_client.exceptions import MetricValueConversionError
from prometheus_api_client.metric_range_df import MetricRangeDataFrame
from prometheus_api_client.prometheus_connect import PrometheusConnect
from urllib3.util.retry import Retry

from autoscaler.sources.prom_api import SourceError, answer_data
from autoscaler.sources.prom_auth import AuthError, PromAuth

PATH = "/api/v1/query_range"
MAX_POINTS = 10_000  # steps per request; Prometheus refuses more than 11,000 points per series


class _BoundedSession(requests.Session):
    """A requests session whose answers are read at most `max_bytes` deep and checked as Prometheus
    answers before the library sees them (so the library only ever parses a successful matrix)."""

    def __init__(self, url: str, max_bytes: int, auth: PromAuth) -> None:
        super().__init__()
        self.url, self.max_bytes, self.prom_auth = url, max_bytes, auth
        auth.verify()  # a CA bundle that cannot be read is one line now, not a TLS error later
        self.verify = str(auth.ca_file) if auth.ca_file is not None else True

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        try:
            request.headers.update(self.prom_auth.request_headers())  # the token as its file holds it now
        except AuthError as e:
            raise SourceError("auth", str(e)) from None
        kwargs["stream"] = True  # the body is read here, chunk by chunk, up to the cap
        r = super().send(request, **kwargs)
        body = bytearray()
        try:
            for chunk in r.iter_content(64 << 10):
                body += chunk
                if len(body) > self.max_bytes:
                    raise SourceError("too_large", f"{PATH} answer over {self.max_bytes} bytes")
        finally:
            r.close()
        data = answer_data(self.url + PATH, r.status_code, bytes(body))
        if data.get("resultType") != "matrix":
            raise SourceError("bad_payload", f"range query answered {data.get('resultType')!r}, expected a matrix")
        if not all(isinstance(item, dict) and isinstance(item.get("values"), list) for item in data["result"]):
            raise SourceError("bad_payload", "matrix item has no values list")
        r._content = bytes(body)  # what `Response.content` would have read, bounded
        return r


class PrometheusRange:
    """Range queries against one Prometheus. `timeout_seconds` bounds connect, read and the server-side
    evaluation; `max_bytes` caps a response body."""

    def __init__(self, url: str, *, timeout_seconds: float = 5.0, max_bytes: int = 64 << 20,
                 auth: PromAuth | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.max_bytes = max_bytes
        self.requests = 0
        self._session = _BoundedSession(self.url, max_bytes, auth or PromAuth())
        self._prom = PrometheusConnect(
            self.url, session=self._session, retry=Retry(total=0, read=False),
            timeout=(min(2.0, timeout_seconds), timeout_seconds),  # type: ignore[arg-type]  # requests' (connect, read)
        )

    def close(self) -> None:
        self._session.close()

    def query_range(self, promql: str, start: float, end: float, step_seconds: float) -> pd.DataFrame:
        """One row per sample: the series' labels as columns, `value`, indexed by unix-seconds `timestamp`.
        Long ranges go as several requests of at most MAX_POINTS steps each. Raises SourceError."""
        frames = []
        n = int((end - start) // step_seconds) + 1
        for first in range(0, n, MAX_POINTS):
            a = start + first * step_seconds
            b = min(end, start + (first + MAX_POINTS - 1) * step_seconds)
            frames.append(self._window(promql, a, b, step_seconds))
        return pd.concat(frames) if len(frames) > 1 else frames[0]

    def _window(self, promql: str, start: float, end: float, step_seconds: float) -> pd.DataFrame:
        where = self.url + PATH
        self.requests += 1
        # The library rounds start/end to whole seconds; the params below override that (and its defaults)
        # so the step grid is exactly the caller's, as in the live source.
        params = {"start": f"{start:.3f}", "end": f"{end:.3f}",
                  "timeout": f"{max(100, int(self.timeout_seconds * 900))}ms"}
        try:
            result = self._prom.custom_query_range(promql, pd.Timestamp(start, unit="s"),
                                                   pd.Timestamp(end, unit="s"), f"{step_seconds:g}", params=params)
        except requests.Timeout as e:
            raise SourceError("timeout", f"{where}: {type(e).__name__}") from None
        except requests.RequestException as e:
            raise SourceError("connect", f"{where}: {type(e).__name__}: {_root_cause(e)}") from None
        if not result:
            return pd.DataFrame({"value": []}, index=pd.Index([], dtype=float, name="timestamp"))
        try:
            frame = MetricRangeDataFrame(result, ts_as_datetime=False)
        except (MetricValueConversionError, TypeError, ValueError, IndexError, KeyError) as e:
            raise SourceError("bad_payload", f"{where}: a sample is not [timestamp, number] ({e})") from None
        if not np.isfinite(frame.index.to_numpy(dtype=float)).all():
            raise SourceError("bad_payload", f"{where}: a sample timestamp is not finite")
        return frame


def _root_cause(e: BaseException) -> str:
    """The innermost reason of a requests/urllib3 error chain (e.g. "[Errno 111] Connection refused"),
    one line instead of the wrapped pool messages."""
    seen = e
    while True:
        nxt = seen.__cause__ or seen.__context__ or next(
            (a for a in getattr(seen, "args", ()) if isinstance(a, BaseException)), None)
        if nxt is None or nxt is seen:
            return str(seen)
        seen = nxt
