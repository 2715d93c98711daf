"""Per-pod in-flight requests: Prometheus's `sum by (pod)` where the policy reads Prometheus, the scrape's
last answer for the pods Prometheus did not answer, unknown (never 0) for the rest."""

from __future__ import annotations

import httpx

from autoscaler.sources.engines import engine_metrics
from autoscaler.sources.failover import FailoverMetricsSource
from autoscaler.sources.per_pod import pod_inflight
from autoscaler.sources.prom_api import Sample, SourceError
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.promql import PromQLBuilder
from autoscaler.sources.scrape import ScrapeMetricsSource
from tests.unit.sources.helpers import fresh_telemetry, msp

NOW = 1_700_000_000.0


class FakeProm:
    def __init__(self, answer: list[Sample] | SourceError) -> None:
        self.answer = answer
        self.queries: list[str] = []

    def query(self, promql: str, t: float) -> list[Sample]:
        self.queries.append(promql)
        if isinstance(self.answer, SourceError):
            raise self.answer
        return self.answer

    def close(self) -> None:
        pass


def _sources(answer: list[Sample] | SourceError) -> tuple[FailoverMetricsSource, FakeProm]:
    fake = FakeProm(answer)
    tel, _ = fresh_telemetry()
    prom = PrometheusMetricsSource("http://prom:9090", telemetry=tel, api_factory=lambda u: fake)  # type: ignore[arg-type,return-value]

    def handler(request: httpx.Request) -> httpx.Response:
        running = {"10.0.0.2": 4, "10.0.0.3": 0}.get(request.url.host)
        if running is None:
            return httpx.Response(503)
        return httpx.Response(200, text=f'vllm:num_requests_running{{model_name="m"}} {running}\n'
                                        'vllm:num_requests_waiting{model_name="m"} 1\n')

    scrape = ScrapeMetricsSource(lambda p: ["10.0.0.2", "10.0.0.3", "10.0.0.4"], telemetry=tel,
                                 transport=httpx.MockTransport(handler))
    return FailoverMetricsSource(prom, scrape), fake


def test_prometheus_first_then_the_scrape_then_unknown() -> None:
    src, fake = _sources([Sample({"pod": "a"}, NOW, 3.0), Sample({"pod": "x"}, NOW, 9.0),
                          Sample({"pod": "bad"}, NOW, float("nan"))])
    p = msp("m", namespace="models", staleness=30)
    src.scrape.collect([p], NOW)  # the controller's tick: the scrape source holds each pod's last answer
    got = pod_inflight(src, p, {"a": "10.0.0.1", "b": "10.0.0.2", "c": "10.0.0.4", "bad": None}, NOW, 30)
    assert got == {"a": 3.0, "b": 5.0, "c": None, "bad": None}
    (q,) = fake.queries
    assert 'namespace="models"' in q and 'model_name="m"' in q and "sum by (pod)" in q
    assert "vllm:num_requests_waiting" in q and "time() -" in q and "<= 30" in q


def test_a_failed_prometheus_query_leaves_the_scrape_and_a_stale_scrape_is_unknown() -> None:
    src, _ = _sources(SourceError("timeout", "timed out"))
    p = msp("m", staleness=30)
    src.scrape.collect([p], NOW)
    assert pod_inflight(src, p, {"b": "10.0.0.2"}, NOW, 30) == {"b": 5.0}
    assert pod_inflight(src, p, {"b": "10.0.0.2"}, NOW + 31, 30) == {"b": None}  # older than the staleness


def test_policies_that_scrape_never_query_prometheus() -> None:
    src, fake = _sources([Sample({"pod": "b"}, NOW, 7.0)])
    p = msp("m", source="scrape", staleness=30)
    src.scrape.collect([p], NOW)
    assert pod_inflight(src, p, {"b": "10.0.0.3"}, NOW, 30) == {"b": 1.0}
    assert fake.queries == []


def test_the_query_sums_running_and_waiting_by_pod_for_every_engine_that_has_both() -> None:
    b = PromQLBuilder()
    p = msp("m", namespace="ns", selector={"team": "a"})
    q = b.pod_inflight_query(engine_metrics("sglang"), p)
    assert q is not None and "sglang:num_running_reqs" in q and "sglang:num_queue_reqs" in q and 'team="a"' in q
    fresh = b.pod_inflight_query(engine_metrics("vllm"), p, freshness=True)
    assert fresh is not None and fresh.startswith("max by (pod) (timestamp(")
