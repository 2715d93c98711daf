"""Prometheus with failover to the direct scrape, per policy, and back."""

from __future__ import annotations

import logging
import math

import httpx
import pytest

from autoscaler.core.signals import MISSING, LatencyHistogram, Measured, Signals
from autoscaler.sources.failover import FailoverMetricsSource, fresher, merge
from autoscaler.sources.prom_api import PrometheusAPI
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.scrape import ScrapeMetricsSource

from .helpers import fresh_telemetry, json_response, msp, prom_transport, vector, vllm_text

T0 = 1_700_000_000.0


def build(prom_up: dict[str, bool]) -> tuple[FailoverMetricsSource, list[str]]:
    tel, _ = fresh_telemetry()
    scraped: list[str] = []

    def answer(q: str) -> httpx.Response:
        if not prom_up["up"]:
            raise httpx.ConnectError("refused")
        if "timestamp(" in q:
            return json_response(vector([({"namespace": "default", "model_name": "m"}, T0, str(T0))]))
        return json_response(vector([({"namespace": "default", "model_name": "m"}, T0, "9")]))

    transport = prom_transport(answer)
    prom = PrometheusMetricsSource("http://p", telemetry=tel, max_parallel_queries=1,
                                   api_factory=lambda u: PrometheusAPI(u, client=httpx.Client(transport=transport)))

    async def pod(request: httpx.Request) -> httpx.Response:
        scraped.append(str(request.url))
        return httpx.Response(200, text=vllm_text(waiting=2))

    scrape = ScrapeMetricsSource(lambda p: ["pod-a"], telemetry=tel, transport=httpx.MockTransport(pod))
    return FailoverMetricsSource(prom, scrape), scraped


def test_prometheus_answers_and_no_pod_is_scraped() -> None:
    src, scraped = build({"up": True})
    assert src.collect([msp("m")], T0)["default/m"].waiting.value == 9
    assert scraped == []


def test_prometheus_down_fails_over_to_scrape_and_back(caplog: pytest.LogCaptureFixture) -> None:
    up = {"up": True}
    src, scraped = build(up)
    src.collect([msp("m")], T0)
    up["up"] = False
    with caplog.at_level(logging.INFO):
        s = src.collect([msp("m")], T0 + 1)["default/m"]
        assert s.waiting.value == 2 and s.waiting.age_seconds == 0
        # A rate the scrape cannot give yet keeps Prometheus's last value, with its age.
        assert s.prompt_tokens_rate.value == 9 and s.prompt_tokens_rate.age_seconds == pytest.approx(1)
        assert src.on_scrape == {"default/m"}
        up["up"] = True
        s = src.collect([msp("m")], T0)["default/m"]
    assert s.waiting.value == 9 and src.on_scrape == frozenset()
    assert len(scraped) == 1
    messages = [r.getMessage() for r in caplog.records]
    assert any("direct scrape" in m for m in messages) and any("back from direct scrape" in m for m in messages)


def test_policies_that_forbid_fallback_stay_on_aging_prometheus_values() -> None:
    up = {"up": True}
    src, scraped = build(up)
    p = msp("m", fallback=False)
    src.collect([p], T0)
    up["up"] = False
    s = src.collect([p], T0 + 30)["default/m"]
    assert s.waiting.value == 9 and s.waiting.age_seconds == pytest.approx(30)
    assert scraped == []


def test_scrape_policies_never_touch_prometheus() -> None:
    src, scraped = build({"up": False})
    s = src.collect([msp("m", source="scrape")], T0)["default/m"]
    assert s.waiting.value == 2 and len(scraped) == 1
    assert src.prometheus.last_query_count == 0


def test_fresher_prefers_present_then_younger() -> None:
    assert fresher(MISSING, Measured(1, 5)) == Measured(1, 5)
    assert fresher(Measured(2, 1), Measured(1, 5)) == Measured(2, 1)
    merged = merge(Signals(waiting=Measured(1, 3)), Signals(waiting=Measured(2, 1), running=Measured(4, 9)))
    assert merged.waiting == Measured(2, 1) and merged.running == Measured(4, 9)


def test_histograms_pass_through_and_the_fresher_present_one_wins() -> None:
    old = LatencyHistogram((1.0, math.inf), (3.0, 4.0), 30.0)
    new = LatencyHistogram((1.0, math.inf), (5.0, 9.0), 2.0)
    merged = merge(Signals(queue_time_histogram=old, ttft_histogram=old), Signals(queue_time_histogram=new))
    assert merged.queue_time_histogram == new and merged.ttft_histogram == old
    assert merge(Signals(), Signals()).ttft_histogram is None


def test_scrape_policies_get_the_scraped_histograms() -> None:
    tel, _ = fresh_telemetry()
    state = {"b": {"1.0": 1.0, "+Inf": 2.0}}

    async def pod(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=vllm_text(queue_buckets=state["b"]))

    prom = PrometheusMetricsSource("http://p", telemetry=tel)
    scrape = ScrapeMetricsSource(lambda p: ["pod-a"], telemetry=tel, transport=httpx.MockTransport(pod))
    src = FailoverMetricsSource(prom, scrape)
    p = msp("m", source="scrape")
    src.collect([p], T0)
    state["b"] = {"1.0": 4.0, "+Inf": 6.0}
    h = src.collect([p], T0 + 15)["default/m"].queue_time_histogram
    assert h is not None and h.cumulative_counts == (3.0, 4.0)


def test_both_sources_say_which_window_their_rates_span_and_build_source_gives_them_one() -> None:
    """The decision core adds the queue's change over the window the served rate spans (stages/demand.py):
    each source says what that is, and a failover between them changes no signal's meaning."""
    from autoscaler.controller.metric_source import build_source
    from autoscaler.sources.promql import PromQLBuilder, duration_seconds

    src, _ = build({"up": True})
    assert src.collect([msp("m")], T0)["default/m"].rate_window_seconds == 60.0
    tel, _ = fresh_telemetry()
    answer = prom_transport(lambda q: json_response(vector([({"namespace": "default", "model_name": "m"}, T0,
                                                             str(T0) if "timestamp(" in q else "9")])))
    prom = PrometheusMetricsSource("http://p", telemetry=tel, max_parallel_queries=1,
                                   builder=PromQLBuilder(window="2m"),
                                   api_factory=lambda u: PrometheusAPI(u, client=httpx.Client(transport=answer)))
    assert prom.collect([msp("m")], T0)["default/m"].rate_window_seconds == 120.0

    async def pod(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=vllm_text(waiting=2))

    scrape = ScrapeMetricsSource(lambda p: ["pod-a"], telemetry=tel, transport=httpx.MockTransport(pod),
                                 window_seconds=30.0)
    assert scrape.collect([msp("m")], T0)["default/m"].rate_window_seconds == 30.0
    built = build_source("http://p", lambda key: [], "90s")
    assert built.scrape.window_seconds == 90.0  # type: ignore[attr-defined]
    assert built.failover.prometheus.builder.window_seconds == 90.0  # type: ignore[attr-defined]
    assert [duration_seconds(w) for w in ("500ms", "30s", "1m", "2h")] == [0.5, 30.0, 60.0, 7200.0]
    for bad in ("1.5m", "0s", "1d", "60", "", "9" * 400 + "h"):
        with pytest.raises(ValueError, match="is not a PromQL duration such as 30s or 1m"):
            build_source("http://p", lambda key: [], bad)
    assert Signals(rate_window_seconds=math.nan).rate_window() == 60.0  # no real span: the default minute
