"""The Prometheus source against a fake HTTP API: values, ages, and every way an answer can be bad."""

from __future__ import annotations

import logging
import math

import httpx
import pytest
from prometheus_client import CollectorRegistry

from autoscaler.core.signals import MISSING
from autoscaler.sources.engines import SignalName
from autoscaler.sources.histogram import histogram_quantile
from autoscaler.sources.prom_api import PrometheusAPI
from autoscaler.sources.prometheus import PrometheusMetricsSource

from .helpers import Answer, error_count, fresh_telemetry, json_response, msp, prom_transport, vector

QUERIES = len(SignalName) + 1  # one per signal (vLLM exposes all) and the freshness query

NOW = 1_700_000_000.0


def source(answer: Answer, log: list[str] | None = None,
           **kw: object) -> tuple[PrometheusMetricsSource, CollectorRegistry]:
    tel, reg = fresh_telemetry()
    transport = prom_transport(answer, log)
    src = PrometheusMetricsSource(
        "http://prom:9090", telemetry=tel, max_parallel_queries=1,
        api_factory=lambda u: PrometheusAPI(u, client=httpx.Client(transport=transport)), **kw,  # type: ignore[arg-type]
    )
    return src, reg


Buckets = list[tuple[str, str]]  # (le, cumulative increase) as Prometheus writes them


def by_metric(values: dict[str, str], t: float = NOW, fresh_t: float | None = None,
              models: tuple[str, ...] = ("m",), ns: str = "default",
              buckets: dict[str, Buckets] | None = None) -> Answer:
    """Answer each query with the value for the first metric name it mentions; bucket queries with one
    series per `le` from `buckets` (default GOOD_BUCKETS)."""
    hists = GOOD_BUCKETS if buckets is None else buckets

    def answer(q: str) -> httpx.Response:
        if q.startswith("max by") and "timestamp(" in q:
            ft = fresh_t if fresh_t is not None else t
            return json_response(vector(({"namespace": ns, "model_name": m}, t, str(ft)) for m in models))
        if "_bucket" in q:
            for name, bs in hists.items():
                if name in q:
                    return json_response(vector(({"namespace": ns, "model_name": m, "le": le}, t, c)
                                                for m in models for le, c in bs))
            return json_response(vector([]))
        for name, v in values.items():
            if name in q:
                return json_response(vector(({"namespace": ns, "model_name": m}, t, v) for m in models))
        return json_response(vector([]))

    return answer


GOOD = {
    "request_success": "2.5", "prompt_tokens": "1000", "generation_tokens": "200",
    "num_requests_running": "8", "num_requests_waiting": "3", "kv_cache_usage_perc": "0.4",
}
# p90 of queue time: rank 9 of 10 lies in (0.5, 1], 4/5 of the way: 0.9 s. TTFT: (1, 2], 9/10: 1.9 s.
GOOD_BUCKETS: dict[str, Buckets] = {
    "request_queue_time": [("0.5", "5"), ("1.0", "10"), ("+Inf", "10")],
    "time_to_first_token": [("1.0", "0"), ("2.0", "10"), ("+Inf", "10")],
}


def test_every_signal_is_read_with_its_value_and_age() -> None:
    src, _ = source(by_metric(GOOD, fresh_t=NOW - 4))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.request_rate.value == 2.5
    assert s.prompt_tokens_rate.value == 1000
    assert s.generation_tokens_rate.value == 200
    assert s.running.value == 8 and s.waiting.value == 3
    assert s.kv_cache_usage.value == 0.4
    assert s.queue_time_p90_seconds.value == pytest.approx(0.9) and s.ttft_p90_seconds.value == pytest.approx(1.9)
    assert s.queue_time_p90_seconds.age_seconds == pytest.approx(4.0)
    assert s.waiting.age_seconds == pytest.approx(4.0)
    assert s.replicas is None  # the controller adds replica counts


def test_one_tick_for_many_models_is_one_query_per_signal() -> None:
    log: list[str] = []
    models = tuple(f"m{i}" for i in range(50))
    src, _ = source(by_metric(GOOD, models=models), log)
    out = src.collect([msp(m) for m in models], NOW)
    assert len(log) == QUERIES and src.last_query_count == QUERIES
    assert all(out[f"default/{m}"].waiting.value == 3 for m in models)


def test_model_absent_from_prometheus_is_missing_not_zero() -> None:
    src, _ = source(by_metric(GOOD, models=("other",)))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.waiting is MISSING and s.prompt_tokens_rate is MISSING


def test_series_without_namespace_label_still_match_by_model() -> None:
    src, _ = source(by_metric(GOOD, ns=""))
    assert src.collect([msp("m", namespace="prod")], NOW)["prod/m"].waiting.value == 3


def test_namespace_tells_apart_two_policies_for_the_same_model_name() -> None:
    def answer(q: str) -> httpx.Response:
        return json_response(vector([({"namespace": "a", "model_name": "m"}, NOW, "1"),
                                     ({"namespace": "b", "model_name": "m"}, NOW, "2")]))

    src, _ = source(answer)
    out = src.collect([msp("m", namespace="a"), msp("m", namespace="b")], NOW)
    assert out["a/m"].waiting.value == 1 and out["b/m"].waiting.value == 2


@pytest.mark.parametrize("raw, kind", [("NaN", "non_finite"), ("+Inf", "non_finite"), ("-3", "negative")])
def test_bad_numbers_are_dropped_and_counted(raw: str, kind: str) -> None:
    src, reg = source(by_metric({**GOOD, "num_requests_waiting": raw}))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.waiting is MISSING
    assert error_count(reg, "prometheus", kind) == 1
    assert s.running.value == 8


def test_a_window_without_finished_requests_has_no_quantile_and_is_not_an_error() -> None:
    empty = [("0.5", "0"), ("1.0", "0"), ("+Inf", "0")]
    src, reg = source(by_metric(GOOD, buckets={**GOOD_BUCKETS, "request_queue_time": empty}))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.queue_time_p90_seconds is MISSING
    assert error_count(reg, "prometheus", "non_finite") == 0


def test_duplicate_series_for_one_model_is_missing_and_counted() -> None:
    def answer(q: str) -> httpx.Response:
        return json_response(vector([({"namespace": "default", "model_name": "m"}, NOW, "1"),
                                     ({"namespace": "default", "model_name": "m"}, NOW, "5")]))

    src, reg = source(answer)
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.waiting is MISSING
    assert error_count(reg, "prometheus", "duplicate_series") >= 1


@pytest.mark.parametrize("response, kind", [
    (httpx.Response(503, content=b"overloaded"), "http_status"),
    (httpx.Response(400, json={"status": "error", "errorType": "bad_data", "error": "parse error"}),
     "http_status"),
    (httpx.Response(200, content=b"<html>proxy login</html>"), "bad_payload"),
    (httpx.Response(200, json={"status": "error", "error": "x"}), "bad_payload"),
    (httpx.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": []}}),
     "bad_payload"),
    (httpx.Response(200, json={"status": "success", "data": {"resultType": "vector",
                                                             "result": [{"metric": {}, "value": ["x"]}]}}),
     "bad_payload"),
    (httpx.Response(200, json=[1, 2]), "bad_payload"),
])
def test_broken_answers_are_missing_and_counted(response: httpx.Response, kind: str) -> None:
    src, reg = source(lambda q: response)
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.waiting is MISSING and s.prompt_tokens_rate is MISSING
    assert error_count(reg, "prometheus", kind) == QUERIES
    assert src.failed_policies == {"default/m"}


def test_connection_refused_and_timeouts_are_counted_by_kind() -> None:
    def refused(q: str) -> httpx.Response:
        raise httpx.ConnectError("refused")

    def slow(q: str) -> httpx.Response:
        raise httpx.ReadTimeout("slow")

    src, reg = source(refused)
    src.collect([msp("m")], NOW)
    assert error_count(reg, "prometheus", "connect") == QUERIES
    src, reg = source(slow)
    src.collect([msp("m")], NOW)
    assert error_count(reg, "prometheus", "timeout") == QUERIES


def test_oversized_answer_is_refused() -> None:
    rows = (({"namespace": "default", "model_name": f"m{i}"}, NOW, "1") for i in range(5000))
    big = json_response(vector(rows))
    tel, reg = fresh_telemetry()
    transport = prom_transport(lambda q: big)
    src = PrometheusMetricsSource(
        "http://p", telemetry=tel, max_parallel_queries=1,
        api_factory=lambda u: PrometheusAPI(u, client=httpx.Client(transport=transport), max_bytes=10_000))
    assert src.collect([msp("m0")], NOW)["default/m0"].waiting is MISSING
    assert error_count(reg, "prometheus", "too_large") == QUERIES


def test_after_a_failure_the_last_value_is_kept_with_its_growing_age() -> None:
    up = {"ok": True}
    clock = {"t": NOW}

    def answer(q: str) -> httpx.Response:
        if not up["ok"]:
            raise httpx.ConnectError("refused")
        return by_metric(GOOD, t=clock["t"])(q)

    src, _ = source(answer)
    p = msp("m", staleness=60)
    assert src.collect([p], NOW)["default/m"].waiting.fresh(60) == 3
    up["ok"] = False
    s = src.collect([p], NOW + 30)["default/m"]
    assert s.waiting.value == 3 and s.waiting.age_seconds == pytest.approx(30)
    s = src.collect([p], NOW + 90)["default/m"]
    assert s.waiting.age_seconds == pytest.approx(90) and s.waiting.fresh(60) is None
    up["ok"], clock["t"] = True, NOW + 100
    s = src.collect([p], NOW + 100)["default/m"]
    assert s.waiting.fresh(60) == 3 and src.failed_policies == frozenset()


def test_a_prometheus_answering_from_old_data_reports_old_ages() -> None:
    src, _ = source(by_metric(GOOD, fresh_t=NOW - 200))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.prompt_tokens_rate.age_seconds == pytest.approx(200)
    assert s.prompt_tokens_rate.fresh(60) is None


def test_failure_is_logged_once_per_episode(caplog: pytest.LogCaptureFixture) -> None:
    up = {"ok": False}

    def answer(q: str) -> httpx.Response:
        if not up["ok"]:
            raise httpx.ConnectError("refused")
        return by_metric(GOOD)(q)

    src, _ = source(answer)
    with caplog.at_level(logging.INFO, logger="autoscaler.sources"):
        for i in range(5):
            src.collect([msp("m")], NOW + i)
        up["ok"] = True
        for i in range(3):
            src.collect([msp("m")], NOW + 10 + i)
    failing = [r for r in caplog.records if r.levelno == logging.WARNING]
    recovered = [r for r in caplog.records if "recovered" in r.getMessage()]
    assert len(failing) == 1 and "failing" in failing[0].getMessage()
    assert len(recovered) == 1


def test_engines_without_a_signal_leave_it_missing() -> None:
    src, _ = source(lambda q: json_response(vector([({"namespace": "default"}, NOW, "4")])))
    s = src.collect([msp("t", engine="tgi")], NOW)["default/t"]
    assert s.waiting.value == 4
    assert s.ttft_p90_seconds is MISSING and s.kv_cache_usage is MISSING


def test_values_are_never_invented_for_unknown_policies() -> None:
    src, _ = source(by_metric(GOOD))
    out = src.collect([msp("m"), msp("n")], NOW)
    assert math.isfinite(out["default/m"].waiting.value or math.nan)
    assert out["default/n"].waiting is MISSING


# --- latency histograms: one bucket query per histogram gives the histogram and its p90 ---------------

INF = math.inf


def bucket_rows(rows: list[tuple[dict[str, str], str]], t: float = NOW) -> Answer:
    """GOOD values, fresh at `t`; the queue-time bucket query answers `rows` of (labels, value)."""
    plain = by_metric(GOOD, t=t)

    def answer(q: str) -> httpx.Response:
        if "request_queue_time_seconds_bucket" in q:
            return json_response(vector((labels, t, v) for labels, v in rows))
        return plain(q)

    return answer


def le(value: str, model: str = "m", ns: str = "default") -> dict[str, str]:
    return {"namespace": ns, "model_name": model, "le": value}


def test_histogram_is_built_from_buckets_in_any_order_with_inf_and_the_freshness_age() -> None:
    src, _ = source(by_metric(GOOD, fresh_t=NOW - 4, buckets={
        "request_queue_time": [("+Inf", "10"), ("1.0", "10"), ("0.5", "5")],
        "time_to_first_token": GOOD_BUCKETS["time_to_first_token"]}))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.queue_time_histogram is not None and s.ttft_histogram is not None
    assert s.queue_time_histogram.upper_bounds == (0.5, 1.0, INF)
    assert s.queue_time_histogram.cumulative_counts == (5.0, 10.0, 10.0)
    assert s.queue_time_histogram.age_seconds == pytest.approx(4.0)
    assert s.ttft_histogram.total == 10 and s.ttft_histogram.linear_share_within(1.5) == pytest.approx(0.5)


def test_p90_is_histogram_quantile_of_the_same_buckets() -> None:
    rows = [(le("0.3"), "7.3"), (le("0.5"), "11.1"), (le("0.8"), "19.7"), (le("+Inf"), "21.3")]
    src, _ = source(bucket_rows(rows))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.queue_time_p90_seconds.value == histogram_quantile(
        0.9, [(0.3, 7.3), (0.5, 11.1), (0.8, 19.7), (INF, 21.3)])


def test_each_model_gets_its_own_histogram_from_one_query() -> None:
    rows = [(le(b, model), str(c * k)) for k, model in ((1, "a"), (3, "b")) for b, c in (("1", 2), ("+Inf", 4))]
    log: list[str] = []
    src, _ = source(bucket_rows(rows), log)
    out = src.collect([msp("a"), msp("b")], NOW)
    a, b = out["default/a"].queue_time_histogram, out["default/b"].queue_time_histogram
    assert a is not None and b is not None
    assert a.cumulative_counts == (2.0, 4.0) and b.cumulative_counts == (6.0, 12.0)
    assert len(log) == QUERIES and sum("_bucket" in q for q in log) == 3


def test_bucket_series_without_namespace_still_match_by_model() -> None:
    src, _ = source(bucket_rows([(le("1", ns=""), "1"), (le("+Inf", ns=""), "2")]))
    h = src.collect([msp("m", namespace="prod")], NOW)["prod/m"].queue_time_histogram
    assert h is not None and h.total == 2


def test_a_missing_middle_bucket_leaves_a_coarser_histogram() -> None:
    src, _ = source(bucket_rows([(le("0.5"), "3"), (le("2.0"), "9"), (le("+Inf"), "10")]))
    h = src.collect([msp("m")], NOW)["default/m"].queue_time_histogram
    assert h is not None and h.upper_bounds == (0.5, 2.0, INF) and h.total == 10


def test_without_the_inf_bucket_there_is_no_histogram_and_no_p90() -> None:
    src, _ = source(bucket_rows([(le("0.5"), "3"), (le("1.0"), "9")]))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.queue_time_histogram is None and s.queue_time_p90_seconds is MISSING


def test_a_duplicated_bucket_makes_the_histogram_missing_and_is_counted() -> None:
    rows = [(le("1.0"), "3"), (le("1.0"), "4"), (le("+Inf"), "9")]
    src, reg = source(bucket_rows(rows))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.queue_time_histogram is None and s.queue_time_p90_seconds is MISSING
    assert error_count(reg, "prometheus", "duplicate_series") == 1


def test_equal_bounds_written_differently_are_one_bucket() -> None:
    src, reg = source(bucket_rows([(le("1"), "3"), (le("1.0"), "4"), (le("+Inf"), "9")]))
    h = src.collect([msp("m")], NOW)["default/m"].queue_time_histogram
    assert h is not None and h.upper_bounds == (1.0, INF) and h.cumulative_counts == (7.0, 9.0)
    assert error_count(reg, "prometheus", "duplicate_series") == 0


@pytest.mark.parametrize("raw, kind", [("NaN", "non_finite"), ("-2", "negative")])
def test_a_bad_bucket_value_makes_the_histogram_missing_and_is_counted(raw: str, kind: str) -> None:
    src, reg = source(bucket_rows([(le("1.0"), raw), (le("+Inf"), "9")]))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.queue_time_histogram is None and s.queue_time_p90_seconds is MISSING
    assert error_count(reg, "prometheus", kind) == 1


def test_a_window_without_finished_requests_is_an_honest_empty_histogram() -> None:
    src, _ = source(bucket_rows([(le("1.0"), "0"), (le("+Inf"), "0")]))
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.queue_time_histogram is not None and s.queue_time_histogram.total == 0
    assert s.queue_time_p90_seconds is MISSING


def test_a_model_absent_from_the_bucket_answer_has_no_histogram() -> None:
    src, _ = source(bucket_rows([(le("1.0", "other"), "1"), (le("+Inf", "other"), "2")]))
    assert src.collect([msp("m")], NOW)["default/m"].queue_time_histogram is None


def test_a_failed_bucket_query_is_no_histogram_never_an_empty_one_while_p90_ages() -> None:
    up = {"ok": True}
    good = by_metric(GOOD)

    def answer(q: str) -> httpx.Response:
        if "_bucket" in q and not up["ok"]:
            return httpx.Response(503, content=b"overloaded")
        return good(q)

    src, _ = source(answer)
    p = msp("m")
    assert src.collect([p], NOW)["default/m"].queue_time_histogram is not None
    up["ok"] = False
    s = src.collect([p], NOW + 20)["default/m"]
    assert s.queue_time_histogram is None and s.ttft_histogram is None
    assert s.queue_time_p90_seconds.value == pytest.approx(0.9)
    assert s.queue_time_p90_seconds.age_seconds == pytest.approx(20)
    assert src.failed_policies == {"default/m"}


def test_engines_without_histograms_have_none() -> None:
    src, _ = source(lambda q: json_response(vector([({"namespace": "default"}, NOW, "4")])))
    s = src.collect([msp("t", engine="trtllm")], NOW)["default/t"]
    assert s.ttft_histogram is None and s.queue_time_histogram is None
