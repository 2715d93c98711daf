"""The backtest's Prometheus client (prometheus-api-client underneath) against a local HTTP server:
the exact step grid, windows under Prometheus's point limit, and the live source's bounds and errors."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autoscaler.backtest.prom_range as prom_range
from autoscaler.backtest.prom_range import PrometheusRange
from autoscaler.sources.prom_api import PrometheusAPI, SourceError

# (status, body, seconds to wait first) for the query parameters of one request
Handler = Callable[[dict[str, str]], tuple[int, bytes, float]]


class FakePrometheus:
    def __init__(self) -> None:
        self.handler: Handler = lambda q: (200, b"{}", 0.0)
        self.requests: list[dict[str, str]] = []
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            def _answer(self, query: str) -> None:
                q = {k: v[-1] for k, v in parse_qs(query).items()}
                fake.requests.append(q)
                status, body, wait = fake.handler(q)
                time.sleep(wait)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (the timeout test)
                    pass

            def do_GET(self) -> None:
                self._answer(urlparse(self.path).query)

            def do_POST(self) -> None:
                self._answer(self.rfile.read(int(self.headers["Content-Length"])).decode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture
def fake() -> Iterator[FakePrometheus]:
    f = FakePrometheus()
    yield f
    f.server.shutdown()


def matrix(q: dict[str, str], series: dict[str, str]) -> bytes:
    """A matrix answer with one sample per step of the requested range, valued by its step time."""
    start, end, step = float(q["start"]), float(q["end"]), float(q["step"])
    n = int((end - start) // step) + 1
    values = [[round(start + k * step, 3), str(start + k * step)] for k in range(n)]
    return json.dumps({"status": "success", "data": {"resultType": "matrix",
                                                     "result": [{"metric": series, "values": values}]}}).encode()


def test_a_range_answer_is_a_frame_on_the_exact_step_grid(fake: FakePrometheus) -> None:
    fake.handler = lambda q: (200, matrix(q, {"model_name": "m", "namespace": "prod"}), 0.0)
    api = PrometheusRange(fake.url, timeout_seconds=10)
    df = api.query_range("sum(x)", 1000.25, 1240.25, 60)
    # start/end keep their milliseconds (the library alone would round them to whole seconds)
    assert fake.requests == [{"query": "sum(x)", "start": "1000.250", "end": "1240.250", "step": "60",
                              "timeout": "9000ms"}]
    assert list(df.index) == [1000.25, 1060.25, 1120.25, 1180.25, 1240.25]
    assert list(df["value"]) == list(df.index)
    assert set(df["model_name"]) == {"m"} and set(df["namespace"]) == {"prod"}


def test_a_long_range_goes_in_windows_that_tile_the_grid(fake: FakePrometheus,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prom_range, "MAX_POINTS", 4)
    fake.handler = lambda q: (200, matrix(q, {"model_name": "m"}), 0.0)
    df = PrometheusRange(fake.url).query_range("x", 0.0, 600.0, 60)  # 11 steps
    assert [(r["start"], r["end"]) for r in fake.requests] == [
        ("0.000", "180.000"), ("240.000", "420.000"), ("480.000", "600.000")]
    assert list(df.index) == [60.0 * k for k in range(11)]


def test_an_empty_answer_is_an_empty_frame(fake: FakePrometheus) -> None:
    fake.handler = lambda q: (200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}', 0.0)
    assert PrometheusRange(fake.url).query_range("x", 0, 60, 60).empty


BAD_ANSWERS: dict[str, tuple[int, bytes]] = {
    "query error": (400, json.dumps({"status": "error", "errorType": "bad_data",
                                     "error": "exceeded maximum resolution of 11,000 points"}).encode()),
    "gateway page": (503, b"<html>unavailable</html>"),
    "not json": (200, b"hello"),
    "not an object": (200, b"[1]"),
    "status error": (200, b'{"status":"error","error":"x"}'),
    "no result": (200, b'{"status":"success","data":{}}'),
    "a vector": (200, b'{"status":"success","data":{"resultType":"vector","result":[]}}'),
    "no values": (200, b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{}}]}}'),
    "too large": (200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}' + b" " * 5000),
}


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_a_bad_answer_fails_with_the_live_source_kind_and_message(fake: FakePrometheus, case: str) -> None:
    status, body = BAD_ANSWERS[case]
    fake.handler = lambda q: (status, body, 0.0)
    errors = []
    for api in (PrometheusAPI(fake.url, max_bytes=4000), PrometheusRange(fake.url, max_bytes=4000)):
        with pytest.raises(SourceError) as e:
            api.query_range("x", 0, 60, 60)
        errors.append((e.value.kind, e.value.detail))
    assert errors[0] == errors[1]


def test_a_bad_sample_value_is_a_bad_payload(fake: FakePrometheus) -> None:
    body = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[0,"abc"]]}]}}'
    fake.handler = lambda q: (200, body, 0.0)
    with pytest.raises(SourceError) as e:
        PrometheusRange(fake.url).query_range("x", 0, 60, 60)
    assert e.value.kind == "bad_payload"


def test_a_slow_answer_times_out_once_without_retries(fake: FakePrometheus) -> None:
    fake.handler = lambda q: (200, matrix(q, {}), 2.0)
    t0 = time.perf_counter()
    with pytest.raises(SourceError) as e:
        PrometheusRange(fake.url, timeout_seconds=0.5).query_range("x", 0, 60, 60)
    assert e.value.kind == "timeout" and e.value.detail.endswith("/api/v1/query_range: ReadTimeout")
    assert time.perf_counter() - t0 < 1.5 and len(fake.requests) == 1


def test_an_unreachable_prometheus_is_one_line_naming_the_cause() -> None:
    with pytest.raises(SourceError) as e:
        PrometheusRange("http://127.0.0.1:9", timeout_seconds=1).query_range("x", 0, 60, 60)
    assert e.value.kind == "connect" and "\n" not in e.value.detail
    assert e.value.detail.startswith("http://127.0.0.1:9/api/v1/query_range: ConnectionError:")
    assert "Connection refused" in e.value.detail


_value = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**20), st.floats(allow_nan=False),
                   st.sampled_from(["1", "NaN", "+Inf", "-Inf", "x", "", "1e400", "0x10"]),
                   st.lists(st.integers(), max_size=3))
_sample = st.one_of(st.lists(_value, min_size=0, max_size=3), _value)
_item = st.one_of(
    st.fixed_dictionaries({"metric": st.one_of(st.dictionaries(st.sampled_from(["pod", "le", "__name__"]),
                                                                st.one_of(st.text(max_size=4), _value), max_size=2),
                                                _value),
                           "values": st.one_of(st.lists(_sample, max_size=4), _value)}),
    _value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(_item, max_size=3), result_type=st.sampled_from(["matrix", "vector", None]))
def test_a_hostile_range_answer_is_a_frame_of_finite_timestamps_or_a_source_error(
        fake: FakePrometheus, items: list[Any], result_type: str | None) -> None:
    body = json.dumps({"status": "success", "data": {"resultType": result_type, "result": items}}).encode()
    fake.handler = lambda q: (200, body, 0.0)
    prom = PrometheusRange(fake.url, timeout_seconds=2.0)
    try:
        frame = prom.query_range("up", 1000.0, 1060.0, 15.0)
    except SourceError as e:
        assert e.kind in ("bad_payload", "too_large") and "\n" not in str(e)
        return
    finally:
        prom.close()
    assert np.isfinite(frame.index.to_numpy(dtype=float)).all() and "value" in frame.columns
