"""Regression tests for the source findings of issue 11: a pod's page or a Prometheus answer can be
hostile; it may fail its own pod or query group, never the batch, never hang a tick, never become a
number outside physics, never read as zero."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from autoscaler.core.signals import MISSING
from autoscaler.sources.engines import SignalName, engine_metrics
from autoscaler.sources.exposition import (
    MAX_LINE_CHARS,
    ExpositionError,
    ExpositionTimeout,
    parse_sample,
    read_pod_metrics,
)
from autoscaler.sources.lastknown import LastKnown
from autoscaler.sources.prom_api import PrometheusAPI, Sample, SourceError
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.promql import PromQLBuilder, promql_string
from autoscaler.sources.scrape import ScrapeMetricsSource
from autoscaler.sources.urls import normalize_url

from .helpers import error_count, fresh_telemetry, json_response, msp, prom_transport, vector, vllm_text

VLLM = engine_metrics("vllm")
NOW = 1_700_000_000.0
REDOS = 'vllm:num_requests_waiting{' + ('a=""' + "    ") * 12 + "!} 1"  # 126 bytes: ~100 s before the fix


# -- the direct-scrape parser --------------------------------------------------------------------------
@pytest.mark.parametrize("line", [
    REDOS,
    'vllm:num_requests_waiting{' + ('a=""' + "    ") * 2000 + "!} 1",
    'vllm:num_requests_waiting{' + ('a="",' + "\t ") * 2000 + "!} 1",
    'vllm:num_requests_waiting{' + 'a="' + "\\" * 15_000 + "} 1",
    'vllm:num_requests_waiting{' + '"' * 15_000 + "} 1",
    'vllm:num_requests_waiting{' + "a=" * 7000 + "} 1",
    "vllm:num_requests_waiting " + "1" * 15_000 + "x",
    "vllm:num_requests_waiting" + " " * 15_000 + "1x",
])
def test_pathological_lines_are_refused_in_milliseconds(line: str) -> None:
    assert len(line) < MAX_LINE_CHARS  # under the cap: the scanner itself must be fast, not the cap
    t0 = time.perf_counter()
    with pytest.raises(ExpositionError):
        read_pod_metrics(line + "\n", VLLM, "m")
    assert time.perf_counter() - t0 < 0.05


def test_a_page_of_pathological_lines_is_linear() -> None:
    page = "\n".join([REDOS] * 5000 + [vllm_text(waiting=3)])
    t0 = time.perf_counter()
    with pytest.raises(ExpositionError):  # the first bad wanted line fails the pod
        read_pod_metrics(page, VLLM, "m")
    other = "\n".join(["other_metric" + REDOS[len("vllm:num_requests_waiting"):]] * 5000) + "\n" + vllm_text(waiting=3)
    assert read_pod_metrics(other, VLLM, "m").gauges[SignalName.WAITING] == (3.0, 1)  # others are skipped
    assert time.perf_counter() - t0 < 0.5


def test_overlong_lines_and_pages_are_refused() -> None:
    with pytest.raises(ExpositionError, match="over"):
        read_pod_metrics('vllm:num_requests_waiting{model_name="' + "m" * MAX_LINE_CHARS + '"} 1\n', VLLM, "m")
    with pytest.raises(ExpositionError, match="lines"):
        read_pod_metrics("\n" * 300_000, VLLM, "m")


def test_parsing_stops_at_the_deadline() -> None:
    page = vllm_text(waiting=1) * 2000
    with pytest.raises(ExpositionTimeout):
        read_pod_metrics(page, VLLM, "m", deadline=time.monotonic() - 1)
    assert read_pod_metrics(page, VLLM, "m", deadline=time.monotonic() + 30).gauges


@pytest.mark.parametrize("line, want", [
    ('a{b="x\\"y\\\\",c="1"} 1e3 123', ("a", {"b": 'x"y\\', "c": "1"}, 1000.0)),
    ("a 3", ("a", {}, 3.0)),
    ('a {x="1",} +Inf', ("a", {"x": "1"}, math.inf)),
    ('a{x="\\q\\n"}\t-2', ("a", {"x": "\\q\n"}, -2.0)),
])
def test_the_scanner_reads_the_text_format(line: str, want: tuple) -> None:
    assert parse_sample(line) == want


@pytest.mark.parametrize("line", ["a", "a{}3", "a 3x", "a 3 4 5", 'a{__x="1"} 1', 'a{x="1" y="2"} 1',
                                  'a{x="1",x="2"} 1', "a 1_0", 'a{x="1"', "a 0x10", "{} 1"])
def test_the_scanner_refuses_what_is_not_a_sample(line: str) -> None:
    with pytest.raises(ValueError):
        parse_sample(line)


# -- plausibility at the source ------------------------------------------------------------------------
def _scrape(body: str) -> tuple[ScrapeMetricsSource, CollectorRegistry]:
    tel, reg = fresh_telemetry()
    transport = httpx.MockTransport(lambda r: httpx.Response(200, text=body))
    return ScrapeMetricsSource({"default/m": ["a"]}, telemetry=tel, transport=transport), reg


@pytest.mark.parametrize("field, raw", [("num_requests_waiting", "1e308"), ("num_requests_running", "5e7"),
                                        ("kv_cache_usage_perc", "1.5")])
def test_scraped_implausible_gauges_are_missing_and_counted(field: str, raw: str) -> None:
    body = vllm_text(waiting=2, running=3, kv=0.5)
    lines = [ln if not ln.startswith(f"vllm:{field}{{") else ln.rsplit(" ", 1)[0] + " " + raw
             for ln in body.split("\n")]
    src, reg = _scrape("\n".join(lines))
    s = src.collect([msp("m")], NOW)["default/m"]
    sig = {"num_requests_waiting": s.waiting, "num_requests_running": s.running,
           "kv_cache_usage_perc": s.kv_cache_usage}[field]
    assert sig is MISSING
    assert error_count(reg, "scrape", "implausible") == 1
    assert s.waiting.value in (None, 2)


def test_a_bad_sample_on_one_dp_engine_makes_the_pods_sum_missing_not_smaller() -> None:
    one = 'vllm:num_requests_waiting{engine="1",model_name="m"} '
    body = vllm_text(waiting=4, engines=2).replace(one + "2.0", one + "NaN")
    assert "NaN" in body
    src, _ = _scrape(body)
    assert src.collect([msp("m")], NOW)["default/m"].waiting is MISSING


def test_kv_rounding_over_one_is_kept_as_one() -> None:
    body = vllm_text(kv=0.5).replace('vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5',
                                     'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 1.0000001')
    src, _ = _scrape(body)
    assert src.collect([msp("m")], NOW)["default/m"].kv_cache_usage.value == 1.0


def _prom(answer, **kw: Any) -> tuple[PrometheusMetricsSource, CollectorRegistry]:
    tel, reg = fresh_telemetry()
    transport = prom_transport(answer)
    api = kw.pop("api", None) or (lambda u: PrometheusAPI(u, client=httpx.Client(transport=transport)))
    return PrometheusMetricsSource("http://prom:9090", telemetry=tel, max_parallel_queries=1, api_factory=api,
                                   **kw), reg


def _answer(waiting: str = "3", fresh: bool = True,
            models: tuple[str, ...] = ("m",)) -> Callable[[str], httpx.Response]:
    def answer(q: str) -> httpx.Response:
        if "timestamp(" in q:
            if not fresh:
                return httpx.Response(503, text="down")
            return json_response(vector(({"namespace": "default", "model_name": m}, NOW, str(NOW)) for m in models))
        v = waiting if "num_requests_waiting" in q else "0.5" if "kv_cache" in q else "1"
        if "_bucket" in q:
            return json_response(vector([]))
        return json_response(vector(({"namespace": "default", "model_name": m}, NOW, v) for m in models))
    return answer


@pytest.mark.parametrize("raw", ["1e308", "2e7", "-1", "NaN"])
def test_prometheus_implausible_values_are_missing_not_zero(raw: str) -> None:
    src, reg = _prom(_answer(waiting=raw))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.waiting is MISSING and s.running.value == 1
    kinds = ("implausible", "negative", "non_finite")
    assert sum(error_count(reg, "prometheus", k) for k in kinds) == 1


def test_without_the_freshness_answer_gauges_are_not_fresh() -> None:
    src, _ = _prom(_answer(fresh=True))
    assert src.collect([msp("m")], NOW)["default/m"].waiting.value == 3
    src._api_factory = None  # type: ignore[assignment]  # (unused: the API object is cached)
    src2, _ = _prom(_answer(fresh=False))
    s = src2.collect([msp("m")], NOW)["default/m"]
    assert s.waiting is MISSING and s.kv_cache_usage is MISSING  # ages unknown: not answered
    assert s.request_rate.value == 1  # a rate is over the window: its time is the evaluation's


def test_last_known_values_belong_to_what_they_measured() -> None:
    lk = LastKnown()
    lk.put("ns/p", "waiting", 5.0, NOW, identity=("prom", "m"))
    assert lk.get("ns/p", "waiting", NOW + 3, identity=("prom", "m")) == type(MISSING)(5.0, 3.0)
    assert lk.get("ns/p", "waiting", NOW + 3, identity=("prom", "other-model")) is MISSING
    lk.put("ns/p", "running", math.nan, NOW)
    lk.put("ns/p", "kv", 0.5, math.nan)
    assert lk.get("ns/p", "running", NOW) is MISSING and lk.get("ns/p", "kv", NOW) is MISSING
    assert lk.get("ns/p", "waiting", math.nan, identity=("prom", "m")).age_seconds == math.inf  # never fresh


def test_an_edited_policy_does_not_inherit_the_old_models_value() -> None:
    answers = {"ok": True}

    def answer(q: str) -> httpx.Response:
        return _answer(models=("m",))(q) if answers["ok"] else httpx.Response(500, text="x")

    src, _ = _prom(answer)
    assert src.collect([msp("p", model="m")], NOW)["default/p"].waiting.value == 3
    answers["ok"] = False
    assert src.collect([msp("p", model="m")], NOW + 1)["default/p"].waiting.value == 3  # aging
    assert src.collect([msp("p", model="m2")], NOW + 2)["default/p"].waiting is MISSING  # not m's


# -- Prometheus answers --------------------------------------------------------------------------------
def _raw(body: bytes) -> Callable[[str], httpx.Response]:
    return lambda q: httpx.Response(200, content=body, headers={"content-type": "application/json"})


ENVELOPE = '{"status":"success","data":{"resultType":"vector","result":[%s]}}'
ROW = '{"metric":{"namespace":"default","model_name":"m"},"value":[%s,%s]}'


@pytest.mark.parametrize("body, kind", [
    (ENVELOPE % (ROW % ("1700000000", "1" * 400)), "non_finite"),   # a 400-digit JSON integer value
    (ENVELOPE % (ROW % ("1" * 400, '"3"')), "bad_payload"),          # ... as the timestamp
    (ENVELOPE % (ROW % ("1700000000", "9" * 5000)), "non_finite"),   # over Python's int-digits limit
    (ENVELOPE % (ROW % ("1700000000", '"' + "1" * 400 + '"')), "bad_payload"),  # a 400-character string
    (ENVELOPE % (ROW % ("1700000000", "1e400")), "non_finite"),
    (ENVELOPE % (ROW % ("1700000000", '"+Inf"')), "non_finite"),
    (ENVELOPE % (ROW % ("1700000000", "true")), "bad_payload"),
    (ENVELOPE % (ROW % ("1700000000", "null")), "bad_payload"),
    (ENVELOPE % ('{"metric":{"model_name":1},"value":[1,"2"]}'), "bad_payload"),
    ('{"status":"success","data":' + "[" * 100_000 + "]" * 100_000 + "}", "bad_payload"),  # deep nesting
    ('{"status":"success","data":{"resultType":"vector","result":{}}}', "bad_payload"),
    ('{"status":"error","error":' + "[" * 900 + "]" * 900 + "}", "bad_payload"),
])
def test_hostile_answers_are_counted_and_never_raise(body: str, kind: str) -> None:
    src, reg = _prom(_raw(body.encode()))
    out = src.collect([msp("m")], NOW)
    assert out["default/m"].waiting is MISSING
    assert error_count(reg, "prometheus", kind) >= 1


def test_a_bad_answer_fails_its_query_group_only() -> None:
    good = _answer(models=("g",))

    def answer(q: str) -> httpx.Response:
        if 'team="a"' in q:
            return httpx.Response(200, content=b'{"status":"success","data":' + b"[" * 50_000 + b"}")
        return good(q)

    src, _ = _prom(answer)
    out = src.collect([msp("m", selector={"team": "a"}), msp("g", selector={"team": "b"})], NOW)
    assert out["default/m"].waiting is MISSING and out["default/g"].waiting.value == 3
    assert src.failed_policies == {"default/m"}


def test_an_unexpected_exception_in_one_query_is_contained() -> None:
    class Boom(PrometheusAPI):
        def query(self, promql: str, time: float) -> list[Sample]:
            if 'team="a"' in promql:
                raise RuntimeError("bug")
            return super().query(promql, time)

    transport = prom_transport(_answer(models=("g",)))
    src, reg = _prom(None, api=lambda u: Boom(u, client=httpx.Client(transport=transport)))
    out = src.collect([msp("m", selector={"team": "a"}), msp("g", selector={"team": "b"})], NOW)
    assert out["default/m"].waiting is MISSING and out["default/g"].waiting.value == 3
    assert error_count(reg, "prometheus", "unexpected") >= 1


def test_a_response_over_the_size_cap_is_cut_off() -> None:
    body = (ENVELOPE % ",".join([ROW % ("1700000000", '"1"')] * 20_000)).encode()
    api = PrometheusAPI("http://p", max_bytes=100_000, client=httpx.Client(transport=prom_transport(_raw(body))))
    with pytest.raises(SourceError) as e:
        api.query("up", NOW)
    assert e.value.kind == "too_large"


def test_a_compressed_answer_is_refused() -> None:
    def answer(q: str) -> httpx.Response:
        return httpx.Response(200, content=b"\x1f\x8b", headers={"content-encoding": "gzip"})
    api = PrometheusAPI("http://p", client=httpx.Client(transport=prom_transport(answer)))
    with pytest.raises(SourceError, match="compressed"):
        api.query("up", NOW)


def test_a_trickling_prometheus_is_cut_off_by_the_total_deadline() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    stop = threading.Event()

    def serve() -> None:
        conn, _ = srv.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        while not stop.wait(0.05):
            try:
                conn.sendall(b" ")
            except OSError:
                break
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    api = PrometheusAPI(f"http://127.0.0.1:{srv.getsockname()[1]}", timeout_seconds=0.4)
    t0 = time.monotonic()
    try:
        with pytest.raises(SourceError) as e:
            api.query("up", NOW)
    finally:
        stop.set()
        srv.close()
    assert e.value.kind == "timeout" and time.monotonic() - t0 < 1.5


# -- the allow-list and PromQL escaping ----------------------------------------------------------------
def test_a_policys_own_prometheus_url_needs_the_allow_list() -> None:
    asked: list[str] = []

    def factory(url: str) -> PrometheusAPI:
        asked.append(url)
        return PrometheusAPI(url, client=httpx.Client(transport=prom_transport(_answer(models=("m", "n")))))

    src, reg = _prom(None, api=factory, allowed_urls=["http://prom-b:9090/"])
    out = src.collect([msp("m", url="http://169.254.169.254/latest"), msp("n", url="HTTP://PROM-B:9090"),
                       msp("d", model="m")], NOW)
    assert out["default/m"] == type(out["default/m"])()  # all missing
    assert "allow-list" in src.policy_errors["default/m"] and "prometheus-allowed-url" in src.policy_errors["default/m"]
    assert out["default/n"].waiting.value == 3 and out["default/d"].waiting.value == 3
    assert sorted(normalize_url(u) for u in asked) == ["http://prom-b:9090", "http://prom:9090"]  # never the other
    assert error_count(reg, "prometheus", "url_not_allowed") == 1
    assert "default/m" not in src.failed_policies  # no silent fallback to the scrape either


def test_without_an_allow_list_every_url_is_used() -> None:
    src, _ = _prom(_answer())
    assert src.collect([msp("m", url="http://elsewhere:9090")], NOW)["default/m"].waiting.value == 3


@pytest.mark.parametrize("a, b", [("http://Prom:9090/", "http://prom:9090"), ("https://p:443/x/", "https://p/x"),
                                  ("http://p:80", "http://p")])
def test_url_normalization_matches_spellings_of_one_address(a: str, b: str) -> None:
    assert normalize_url(a) == normalize_url(b)


@pytest.mark.parametrize("a, b", [("http://prom:9090@evil", "http://prom:9090"), ("http://p:9090", "https://p:9090"),
                                  ("http://p/?x=1", "http://p")])
def test_url_normalization_keeps_different_addresses_apart(a: str, b: str) -> None:
    assert normalize_url(a) != normalize_url(b)


def test_label_selector_values_are_escaped_and_bad_keys_refused() -> None:
    log: list[str] = []
    src, reg = _prom(_answer())
    src2 = PrometheusMetricsSource("http://prom:9090", telemetry=src.telemetry, max_parallel_queries=1,
                                   api_factory=lambda u: PrometheusAPI(u, client=httpx.Client(
                                       transport=prom_transport(_answer(), log))))
    evil = 'x"} or vector(1e308) or foo{a="'
    src2.collect([msp("m", selector={"team": evil + "\r\x00\\"})], NOW)
    assert log and all(promql_string(evil + "\r\x00\\") in q for q in log)
    assert all("or vector(1e308) or foo{a=" not in q.replace(promql_string(evil + "\r\x00\\"), "") for q in log)
    assert promql_string('a"b\\c\nd\re') == '"a\\"b\\\\c\\nd\\x0de"'
    out = src.collect([msp("k", selector={'team"} or vector(1) #': "a"})], NOW)
    assert out["default/k"].waiting is MISSING and "labelSelector key" in src.policy_errors["default/k"]
    assert error_count(reg, "prometheus", "bad_selector") == 1
    with pytest.raises(ValueError, match="labelSelector"):
        PromQLBuilder().plan([msp("k", selector={"a b": "x"})], "http://p")


def test_hostile_json_numbers_parse_as_floats() -> None:
    from autoscaler.sources.prom_api import _json

    assert _json(b"[" + b"1" * 400 + b"]") == [math.inf] or _json(b"[" + b"1" * 400 + b"]")[0] > 1e300
    assert json.dumps(_json(b'{"a": 3}')) == '{"a": 3.0}'
    with pytest.raises(ValueError, match="deep"):
        _json(b"[" * 100_000 + b"]" * 100_000)
