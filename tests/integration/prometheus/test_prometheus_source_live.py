"""The Prometheus source against a real Prometheus scraping the emulator.

Ground truth is the emulator fleet's own totals at the wall time of Prometheus's newest sample.
Tolerances (stated, and why):
- waiting, running, KV-cache use: exact, up to the scrape's timing. Prometheus scrapes each replica at
  its own offset within the 1 s interval, so the summed value must lie inside [Σ min, Σ max] of each
  replica's values over the 1.6 s before the newest sample; measured error = distance outside that
  range, allowed ≤ 1 sequence (≤ 0.01 for the KV fraction).
- rates over the 20 s window: ±10 %. Prometheus's rate() extrapolates to the window edges from 1 s
  samples; the truth is the exact counter difference over the same 20 s.
- queue-time p90: ±25 % or within one bucket of vLLM's request_latency_buckets, whichever is wider;
  both sides interpolate inside coarse buckets (0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5 ...).
- queue-time and TTFT histograms (bucket increases over the 20 s window): total requests ±15 % (increase()
  extrapolates each replica's buckets to the window edges, and ~180 requests make the edges count); share
  of requests under 1 s, and under every other bucket bound (bounds of both, so no interpolation), ±0.05.
- the p90 signals, now computed client-side from the same bucket increases: equal to PromQL's own
  histogram_quantile over rate() at the same evaluation time, to 1e-9 relative (rate() is increase()
  divided by the window, so only the last bits of the float may differ).
"""

from __future__ import annotations

import time

import httpx
import pytest

from autoscaler.core import CoreState, ReplicaCounts
from autoscaler.core.decide import Reason, decide
from autoscaler.core.signals import LatencyHistogram
from autoscaler.emulator.server import EmulatorServer
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.engines import SignalName, engine_metrics
from autoscaler.sources.failover import FailoverMetricsSource
from autoscaler.sources.prom_api import PrometheusAPI
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.promql import PromQLBuilder
from autoscaler.sources.scrape import ScrapeMetricsSource
from simulations.histograms import REQUEST_LATENCY_BUCKETS, TTFT_BUCKETS, quantile_from_counts
from tests.unit.sources.helpers import fresh_telemetry, msp

from .conftest import MODEL, REPLICAS, PrometheusProcess, scrape_config

pytestmark = pytest.mark.integration
WINDOW_S = 20.0


def policy(staleness: float = 60.0) -> ModelScalingPolicy:
    return msp("llama", model=MODEL, namespace="serving", staleness=staleness)


def source(url: str, timeout: float = 2.0) -> PrometheusMetricsSource:
    tel, _ = fresh_telemetry()
    return PrometheusMetricsSource(url, builder=PromQLBuilder(window=f"{WINDOW_S:g}s"), telemetry=tel,
                                   timeout_seconds=timeout)


def truth_histogram(bounds: tuple[float, ...], now: tuple[float, ...], before: tuple[float, ...]) -> LatencyHistogram:
    """The emulator's per-bucket counts over a window as cumulative `le` buckets."""
    cumulative, acc = [], 0.0
    for a, b in zip(now, before, strict=True):
        acc += a - b
        cumulative.append(acc)
    return LatencyHistogram((*bounds, float("inf")), tuple(cumulative), 0.0)


def wait_until_warm(emulator: EmulatorServer, seconds: float) -> None:
    left = emulator.driver.started_wall + seconds - time.time()
    if left > 0:
        time.sleep(left)


def test_signals_match_the_emulator_ground_truth(emulator: EmulatorServer, prometheus: PrometheusProcess) -> None:
    wait_until_warm(emulator, WINDOW_S + 8)
    src = source(prometheus.url)
    p = policy()
    errors: dict[str, list[float]] = {k: [] for k in ("waiting", "running", "kv", "prompt", "gen", "req", "p90",
                                                      "queue_total", "queue_share", "ttft_total", "ttft_share")}
    for _ in range(3):
        now = time.time()
        s = src.collect([p], now)[p.key]
        assert s.rate_window_seconds == WINDOW_S  # the window its rates were read over, for the core's demand
        sample_wall = now - s.waiting.age_seconds
        truth = emulator.driver.truth_at(sample_wall)
        before = emulator.driver.truth_at(sample_wall - WINDOW_S)
        assert truth is not None and before is not None
        assert s.waiting.value is not None and s.running.value is not None and s.kv_cache_usage.value is not None
        # Prometheus scrapes each replica at its own offset within the 1 s interval, so the sum mixes
        # per-replica values from up to ~1 s apart: it must lie within the per-replica ranges.
        snaps = [x for x in list(emulator.driver.recent) if sample_wall - 1.6 <= x.wall_time <= sample_wall + 0.3]
        for key, got, attr, mean in (("waiting", s.waiting.value, "waiting", False),
                                     ("running", s.running.value, "running", False),
                                     ("kv", s.kv_cache_usage.value, "kv_cache_usage", True)):
            lo = sum(min(getattr(x.replicas[i], attr) for x in snaps) for i in range(REPLICAS))
            hi = sum(max(getattr(x.replicas[i], attr) for x in snaps) for i in range(REPLICAS))
            if mean:
                lo, hi = lo / REPLICAS, hi / REPLICAS
            errors[key].append(max(0.0, lo - got, got - hi))
        for key, rate, t1, t0 in (
            ("prompt", s.prompt_tokens_rate.value, truth.prompt_tokens, before.prompt_tokens),
            ("gen", s.generation_tokens_rate.value, truth.generation_tokens, before.generation_tokens),
            ("req", s.request_rate.value, truth.request_success, before.request_success),
        ):
            want = (t1 - t0) / WINDOW_S
            assert rate is not None and want > 0
            errors[key].append(abs(rate - want) / want)
        deltas = [a - b for a, b in zip(truth.queue_time_counts, before.queue_time_counts, strict=True)]
        want_p90 = quantile_from_counts(0.9, REQUEST_LATENCY_BUCKETS, deltas)
        got_p90 = s.queue_time_p90_seconds.value
        assert want_p90 is not None and got_p90 is not None
        bucket = next((b for b in REQUEST_LATENCY_BUCKETS if b >= want_p90), REQUEST_LATENCY_BUCKETS[-1])
        i = REQUEST_LATENCY_BUCKETS.index(bucket)
        width = bucket - (REQUEST_LATENCY_BUCKETS[i - 1] if i else 0.0)
        errors["p90"].append(abs(got_p90 - want_p90) / max(0.25 * want_p90, width))
        for key, got_h, want_h in (
            ("queue", s.queue_time_histogram,
             truth_histogram(REQUEST_LATENCY_BUCKETS, truth.queue_time_counts, before.queue_time_counts)),
            ("ttft", s.ttft_histogram, truth_histogram(TTFT_BUCKETS, truth.ttft_counts, before.ttft_counts)),
        ):
            assert got_h is not None and want_h.total > 50
            assert got_h.upper_bounds == want_h.upper_bounds and 0 <= got_h.age_seconds < 3.0
            errors[f"{key}_total"].append(abs(got_h.total - want_h.total) / want_h.total)
            # Share under 1 s, and under every other bucket bound too (queue times may all be < 0.3 s).
            for bound in want_h.upper_bounds[:-1]:
                got_share, want_share = got_h.share_within(bound), want_h.share_within(bound)
                assert got_share is not None and want_share is not None
                errors[f"{key}_share"].append(abs(got_share - want_share))
        time.sleep(1.5)
    print("max errors:", {k: round(max(v), 4) for k, v in errors.items()})
    assert max(errors["waiting"]) <= 1 and max(errors["running"]) <= 1
    assert max(errors["kv"]) <= 0.01
    assert max(errors["prompt"]) <= 0.10 and max(errors["gen"]) <= 0.10 and max(errors["req"]) <= 0.10
    assert max(errors["p90"]) <= 1.0
    assert max(errors["queue_total"]) <= 0.15 and max(errors["ttft_total"]) <= 0.15
    assert max(errors["queue_share"]) <= 0.05 and max(errors["ttft_share"]) <= 0.05
    # one query per signal and the freshness query: the histograms cost none (they replace the p90 queries)
    assert src.last_query_count == len(SignalName) + 1


def test_p90_from_the_buckets_equals_promql_histogram_quantile(emulator: EmulatorServer,
                                                               prometheus: PrometheusProcess) -> None:
    wait_until_warm(emulator, WINDOW_S + 8)
    src = source(prometheus.url)
    p = policy()
    at = time.time() - 3.0  # every sample up to here is ingested: both queries read the same data
    s = src.collect([p], at)[p.key]
    api = PrometheusAPI(prometheus.url)
    for signal, got in ((SignalName.QUEUE_TIME_P90, s.queue_time_p90_seconds.value),
                        (SignalName.TTFT_P90, s.ttft_p90_seconds.value)):
        q = src.builder.signal_query(engine_metrics("vllm"), signal, models=[MODEL])
        assert q is not None
        server = [x.value for x in api.query(q, at) if x.labels.get("namespace") == "serving"]
        assert len(server) == 1 and got is not None
        assert got == pytest.approx(server[0], rel=1e-9, abs=0.0), signal
    api.close()


def test_ages_are_the_age_of_prometheus_newest_sample(emulator: EmulatorServer,
                                                      prometheus: PrometheusProcess) -> None:
    src = source(prometheus.url)
    s = src.collect([policy()], time.time())[policy().key]
    assert 0 <= s.waiting.age_seconds < 3.0  # 1 s scrape interval, plus evaluation


def test_prometheus_killed_signals_go_stale_the_core_holds_and_the_source_recovers(
        emulator: EmulatorServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    prom = PrometheusProcess(scrape_config(emulator), tmp_path_factory.mktemp("prom-kill"))
    prom.start()
    try:
        prom.wait_for("vllm:num_requests_waiting", n=REPLICAS)
        prom.wait_for(f"rate(vllm:prompt_tokens_total[{WINDOW_S:g}s]) > 0", n=REPLICAS, timeout=20)
        p = policy(staleness=4.0)
        src = source(prom.url, timeout=1.0)
        replicas = ReplicaCounts(desired=REPLICAS, ready=REPLICAS)
        s = src.collect([p], time.time())[p.key]
        assert s.prompt_tokens_rate.fresh(4.0) is not None

        prom.kill()
        ages = []
        for _ in range(4):
            time.sleep(2.0)
            s = src.collect([p], time.time())[p.key]
            ages.append(s.prompt_tokens_rate.age_seconds)
        assert ages == sorted(ages) and ages[-1] > 4.0
        assert s.prompt_tokens_rate.fresh(4.0) is None and s.waiting.fresh(4.0) is None
        assert src.failed_policies == {p.key}
        state = CoreState()
        for i in range(3):
            from dataclasses import replace

            result = decide(p.spec, replace(s, replicas=replicas), state, time.time() + i)
            state = result.state
            assert result.decision.reason is Reason.METRICS_MISSING
            assert result.decision.desired_replicas is not None
            assert result.decision.desired_replicas >= REPLICAS  # never scale down on unknown data

        prom.start()
        prom.wait_for("vllm:num_requests_waiting", n=REPLICAS)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = src.collect([p], time.time())[p.key]
            if s.waiting.fresh(4.0) is not None and s.prompt_tokens_rate.fresh(4.0) is not None:
                break
            time.sleep(1.0)
        assert s.waiting.fresh(4.0) is not None and s.prompt_tokens_rate.fresh(4.0) is not None
        assert src.failed_policies == frozenset()
    finally:
        prom.stop()


def test_failover_to_direct_scrape_when_prometheus_is_down(emulator: EmulatorServer) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}"
    prom_src = source(dead, timeout=0.5)
    scrape = ScrapeMetricsSource(
        lambda pol: [emulator.replica_url(r.replica_id) for r in emulator.driver.snapshot.replicas],
        telemetry=prom_src.telemetry, window_seconds=WINDOW_S)  # aligned with Prometheus's, as build_source does
    src = FailoverMetricsSource(prom_src, scrape)
    p = policy(staleness=10)
    t0 = time.time()
    s = src.collect([p], t0)[p.key]
    t1 = time.time()
    assert src.on_scrape == {p.key}
    # The scrape reads each replica at its own moment while the emulator keeps ticking, so the summed
    # `waiting` must lie within the per-replica ranges over the collect (as in the Prometheus test above).
    snaps = [x for x in list(emulator.driver.recent) if t0 - 1.1 <= x.wall_time <= t1 + 0.1]
    assert snaps
    lo = sum(min(x.replicas[i].waiting for x in snaps) for i in range(REPLICAS))
    hi = sum(max(x.replicas[i].waiting for x in snaps) for i in range(REPLICAS))
    assert s.waiting.fresh(10) is not None and s.waiting.value is not None and lo - 1 <= s.waiting.value <= hi + 1
    assert s.rate_window_seconds == WINDOW_S  # a failover does not change what a rate means
    time.sleep(2.0)
    s = src.collect([p], time.time())[p.key]
    assert s.prompt_tokens_rate.fresh(10) is not None and s.prompt_tokens_rate.value is not None \
        and s.prompt_tokens_rate.value > 0
    assert s.ttft_histogram is not None and s.ttft_histogram.total > 0  # bucket deltas between the scrapes


def _closed_port() -> int:
    from tests.prometheus_server import free_port

    port = free_port()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
    return port
