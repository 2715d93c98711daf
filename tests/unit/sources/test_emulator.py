"""The emulator: exposition byte-compatible with vLLM's, the HTTP routes, and the replica count it follows."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import httpx
import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from autoscaler.emulator import FleetDriver, fixed_replicas, render, replicas_file
from autoscaler.emulator.build import build_emulator
from autoscaler.emulator.server import EmulatorServer
from autoscaler.sources.engines import engine_metrics
from autoscaler.sources.exposition import read_pod_metrics
from autoscaler.sources.scrape import ScrapeMetricsSource
from simulations.fleet import RequestFleet
from simulations.histograms import REQUEST_LATENCY_BUCKETS, TTFT_BUCKETS
from simulations.histograms import Histogram as SimHistogram
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace

from .helpers import fresh_telemetry, msp

CREATED = 1_700_000_000.25


def poisson_trace(rate: float = 8.0, seconds: float = 600.0, seed: int = 0) -> Trace:
    rng = np.random.default_rng(seed)
    n = int(rate * seconds)
    t = np.cumsum(rng.exponential(1.0 / rate, n))
    return Trace("poisson", t, rng.integers(200, 1500, n), rng.integers(20, 300, n), 0.0)


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class Replica:
    """A stand-in replica snapshot with fixed numbers."""

    def __init__(self) -> None:
        self.replica_id = 0
        self.running, self.waiting, self.kv_cache_usage = 8, 3, 0.61
        self.prompt_tokens, self.generation_tokens = 8128902.0, 27453.0
        self.request_success, self.preemptions = 131, 0
        queue_time = SimHistogram(REQUEST_LATENCY_BUCKETS)
        ttft = SimHistogram(TTFT_BUCKETS)
        for v in (0.2, 0.4, 1.2, 7.0, 9000.0):
            queue_time.observe(v)
            ttft.observe(v / 10)
        self.e2e_latency = SimHistogram(REQUEST_LATENCY_BUCKETS).snapshot()
        self.inter_token_latency = SimHistogram((0.01, 0.025)).snapshot()
        self.queue_time = queue_time.snapshot()
        self.ttft = ttft.snapshot()


def vllm_reference(r: Replica) -> bytes:
    """The same numbers through prometheus_client metrics declared as vLLM's PrometheusStatLogger does."""
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    with mock.patch("time.time", return_value=CREATED):
        g = {n: Gauge(n, d, labelnames=labels, registry=reg) for n, d in [
            ("vllm:num_requests_running", "Number of requests in model execution batches."),
            ("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
            ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")]}
        pre = Counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", labels,
                      registry=reg)
        prompt = Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", labels, registry=reg)
        gen = Counter("vllm:generation_tokens", "Number of generation tokens processed.", labels, registry=reg)
        succ = Counter("vllm:request_success", "Count of successfully processed requests.",
                       [*labels, "finished_reason"], registry=reg)
        ttft = Histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                         labels, buckets=TTFT_BUCKETS, registry=reg)
        itl = Histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                        labels, buckets=(0.01, 0.025), registry=reg)
        e2e = Histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                        labels, buckets=REQUEST_LATENCY_BUCKETS, registry=reg)
        queue = Histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
                          labels, buckets=REQUEST_LATENCY_BUCKETS, registry=reg)
        lv = ("m", "0")
        v: float
        g["vllm:num_requests_running"].labels(*lv).set(r.running)
        g["vllm:num_requests_waiting"].labels(*lv).set(r.waiting)
        g["vllm:kv_cache_usage_perc"].labels(*lv).set(r.kv_cache_usage)
        pre.labels(*lv).inc(0)
        prompt.labels(*lv).inc(r.prompt_tokens)
        gen.labels(*lv).inc(r.generation_tokens)
        for reason, v in (("stop", r.request_success), ("length", 0), ("abort", 0)):
            succ.labels(*lv, reason).inc(v)
        for v in (0.2, 0.4, 1.2, 7.0, 9000.0):
            queue.labels(*lv).observe(v)
            ttft.labels(*lv).observe(v / 10)
        e2e.labels(*lv)
        itl.labels(*lv)
    return generate_latest(reg)


def test_exposition_is_byte_identical_to_prometheus_client_metrics_declared_like_vllm() -> None:
    r = Replica()
    assert render(r, model="m", created=CREATED) == vllm_reference(r)


def test_exposition_keeps_vllm_colon_names_and_its_buckets() -> None:
    text = render(Replica(), model="m", created=CREATED).decode()
    assert 'vllm:request_queue_time_seconds_bucket{engine="0",le="7680.0",model_name="m"} 4.0' in text
    assert 'vllm:time_to_first_token_seconds_bucket{engine="0",le="2560.0",model_name="m"} 5.0' in text
    assert "vllm_" not in text
    assert 'vllm:prompt_tokens_total{engine="0",model_name="m"} 8.128902e+06' in text


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tgi"])
def test_each_engine_format_reads_back_through_the_engine_table(engine: str) -> None:
    text = render(Replica(), model="m", engine=engine, created=CREATED).decode()
    m = read_pod_metrics(text, engine_metrics(engine), "m")
    from autoscaler.sources.engines import SignalName

    assert m.gauges[SignalName.WAITING] == (3.0, 1)
    assert sum(m.counters[SignalName.PROMPT_TOKENS_RATE].values()) == 8128902.0


def make_server(tmp_path: Path, replicas: int = 2) -> tuple[EmulatorServer, FakeClock, Path]:
    clock = FakeClock()
    count = tmp_path / "replicas"
    count.write_text(str(replicas))
    fleet = RequestFleet(poisson_trace(), ServingProfile(), COLD_START_PROFILES["warm"], initial_replicas=replicas)
    driver = FleetDriver(fleet, replicas_file(count), clock=clock)
    server = EmulatorServer(driver, model="m", targets_file=tmp_path / "targets.json")
    return server, clock, count


def test_routes_serve_each_replica_targets_and_truth(tmp_path: Path) -> None:
    server, _clock, _ = make_server(tmp_path)
    server.start()
    try:
        r = httpx.get(server.replica_url(0))
        assert r.status_code == 200
        assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        # A client negotiating OpenMetrics still gets vLLM's names, as from a real vLLM.
        r = httpx.get(server.replica_url(1), headers={"Accept": "application/openmetrics-text; version=1.0.0"})
        assert "vllm:num_requests_waiting" in r.text and r.headers["content-type"].startswith("text/plain")
        assert httpx.get(server.replica_url(99)).status_code == 404
        targets = httpx.get(server.base_url + "/targets").json()
        assert [t["labels"]["__metrics_path__"] for t in targets] == ["/replica/0/metrics", "/replica/1/metrics",
                                                                       "/gateway/metrics"]
        assert len({t["labels"]["instance"] for t in targets}) == 3
        gateway = httpx.get(server.base_url + "/gateway/metrics").text
        assert "inference_autoscaler_emulator_gateway_requests{" in gateway  # the fleet's outstanding requests
        assert json.loads((tmp_path / "targets.json").read_text()) == targets
        assert httpx.get(server.base_url + "/truth").json()["replicas"] == 2
    finally:
        server.stop()


def test_the_gateway_holds_what_arrives_while_no_replica_serves(tmp_path: Path) -> None:
    """At 0 replicas the gateway's gauge counts every arrival (the scaleFromZero signal); once a replica
    serves, it falls back to what is in flight."""
    from prometheus_client.parser import text_string_to_metric_families

    server, clock, count = make_server(tmp_path, replicas=0)
    d = server.driver

    def gateway() -> float:
        body = server.handle("/gateway/metrics").body.decode()
        (fam,) = text_string_to_metric_families(body)
        (sample,) = fam.samples
        assert sample.labels == {"model_name": "m", "namespace": "default"}
        return float(sample.value)

    for _ in range(20):
        clock.t += 1.0
        d.step()
    held = gateway()
    assert held == d.snapshot.truth.in_flight > 100  # ~8 requests/s for 20 s, none served
    count.write_text("1")
    for _ in range(400):
        clock.t += 1.0
        d.step()
    assert gateway() < held


def test_replica_count_follows_the_file_after_a_cold_start(tmp_path: Path) -> None:
    server, clock, count = make_server(tmp_path, replicas=1)
    d = server.driver
    count.write_text("3")
    clock.t += 1.5
    d.step()
    assert d.target == 3 and len(d.snapshot.replicas) == 1  # asked for, still starting
    for _ in range(300):
        clock.t += 1.0
        d.step()
    assert len(d.snapshot.replicas) == 3
    count.write_text("garbage")
    clock.t += 1.5
    d.step()
    assert d.target == 3  # an unreadable file keeps the count


def test_scraping_the_emulator_matches_the_fleet_ground_truth(tmp_path: Path) -> None:
    server, clock, _ = make_server(tmp_path, replicas=2)
    server.start()
    try:
        tel, _ = fresh_telemetry()
        src = ScrapeMetricsSource(lambda p: [server.replica_url(r.replica_id) for r in server.driver.snapshot.replicas],
                                  telemetry=tel)
        d = server.driver
        server.driver.stop()  # drive the clock by hand
        clock.t += 60
        d.step()
        t1, before = clock.t, d.snapshot.truth
        src.collect([msp("m")], t1)
        clock.t += 30
        d.step()
        after = d.snapshot.truth
        s = src.collect([msp("m")], clock.t)["default/m"]
        assert s.waiting.value == after.waiting and s.running.value == after.running
        assert s.kv_cache_usage.value == pytest.approx(after.kv_cache_usage)
        assert s.prompt_tokens_rate.value == pytest.approx((after.prompt_tokens - before.prompt_tokens) / 30)
        assert s.request_rate.value == pytest.approx((after.request_success - before.request_success) / 30)
    finally:
        server.stop()


def test_build_emulator_wires_the_simulator_fleet() -> None:
    server = build_emulator(poisson_trace(seconds=10), fixed_replicas(2), model="x")
    try:
        assert {r.replica_id for r in server.driver.snapshot.replicas} == {0, 1}
        assert b'model_name="x"' in (server.metrics_for(0) or b"")
    finally:
        server.stop()


def _scraped(driver: FleetDriver, model: str = "m") -> tuple[float, float, float, float]:
    """(waiting, running, queue-time observations, queue-time sum) summed over the replicas' /metrics text."""
    from autoscaler.sources.engines import SignalName

    waiting = running = count = total = 0.0
    for r in driver.snapshot.replicas:
        text = render(r, model=model, created=CREATED).decode()
        m = read_pod_metrics(text, engine_metrics("vllm"), model)
        waiting += m.gauges[SignalName.WAITING][0]
        running += m.gauges[SignalName.RUNNING][0]
        for line in text.splitlines():
            if line.startswith("vllm:request_queue_time_seconds_count"):
                count += float(line.rsplit(" ", 1)[1])
            elif line.startswith("vllm:request_queue_time_seconds_sum"):
                total += float(line.rsplit(" ", 1)[1])
    return waiting, running, count, total


def test_an_overload_shows_in_the_served_metrics_as_a_real_vllm_would() -> None:
    """400 prompts of 1,000 tokens within a second on 2 replicas (prefill-bound for ~14 s): the scraped
    num_requests_waiting is > 0 during the burst and queue time accumulates; idle before and after."""
    n = 400
    t = 20.0 + np.linspace(0.0, 1.0, n)
    trace = Trace("burst", t, np.full(n, 1000), np.full(n, 200), 0.0)
    clock = FakeClock()
    fleet = RequestFleet(trace, ServingProfile(), COLD_START_PROFILES["warm"], initial_replicas=2)
    d = FleetDriver(fleet, fixed_replicas(2), clock=clock)
    seen: dict[float, tuple[float, float, float, float]] = {}
    for _ in range(0, 120, 5):
        clock.t += 5.0
        d.step()
        seen[d.snapshot.sim_time] = _scraped(d)
    assert seen[15.0][:3] == (0.0, 0.0, 0.0)  # idle before the burst
    during = [v for k, v in seen.items() if 21 <= k <= 30]
    assert during and all(w > 0 and r > 0 for w, r, _, _ in during)
    done = seen[120.0]
    assert done[0] == 0 and done[1] == 0 and done[2] == n
    assert done[3] / n > 2.0  # mean queue time: seconds in WAITING, as vllm:request_queue_time_seconds says
    assert seen[110.0][2:] == seen[120.0][2:]  # idle: no new queue-time observations
    assert fleet.replica_snapshots(120.0)[0].kv_cache_usage == 0.0


@pytest.mark.parametrize("body", [b"12", b" 7\n"])
def test_the_replicas_file_gives_its_count(tmp_path: Path, body: bytes) -> None:
    count = tmp_path / "replicas"
    count.write_bytes(body)
    assert replicas_file(count)() == int(body)


@pytest.mark.parametrize("body", [b"-1", b"1000000000000", b"x", b"", b"\xff\xfe", b"1" * 100, b"3\n" + b" " * 100])
def test_a_replicas_file_outside_a_fleet_keeps_the_count(tmp_path: Path, body: bytes) -> None:
    # 10^12 replicas once reached the fleet as its target; a file of any size was read whole.
    count = tmp_path / "replicas"
    count.write_bytes(body)
    assert replicas_file(count)() is None
