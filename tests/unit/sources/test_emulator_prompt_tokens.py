"""The emulator serves vllm:request_prompt_tokens as vLLM does: 1-2-5 token buckets up to max_model_len,
observed once per finished request, after the request counter, in text format 0.0.4."""

from __future__ import annotations

from unittest import mock

import numpy as np
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from autoscaler.emulator import FleetDriver, fixed_replicas, render
from autoscaler.sources.engines import SignalName, engine_metrics
from autoscaler.sources.exposition import read_pod_metrics
from simulations.fleet import RequestFleet
from simulations.histograms import PROMPT_TOKEN_BUCKETS, build_1_2_5_buckets
from simulations.histograms import Histogram as SimHistogram
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace

from .test_emulator import CREATED, FakeClock, Replica

PROMPTS = (1, 7, 180, 2_000, 2_001, 31_000, 131_072)


def test_buckets_are_vllms_1_2_5_up_to_max_model_len() -> None:
    assert build_1_2_5_buckets(100) == (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
    assert PROMPT_TOKEN_BUCKETS[:4] == (1.0, 2.0, 5.0, 10.0) and PROMPT_TOKEN_BUCKETS[-1] == 100_000.0


def test_the_family_is_byte_identical_to_prometheus_clients_and_sits_after_the_request_counter() -> None:
    r = Replica()
    h = SimHistogram(PROMPT_TOKEN_BUCKETS)
    for p in PROMPTS:
        h.observe(p)
    r.prompt_length = h.snapshot()  # type: ignore[attr-defined]
    text = render(r, model="m", created=CREATED).decode()
    reg = CollectorRegistry()
    with mock.patch("time.time", return_value=CREATED):
        ref = Histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", ["model_name", "engine"],
                        buckets=build_1_2_5_buckets(131_072), registry=reg)
        for p in PROMPTS:
            ref.labels("m", "0").observe(p)
    family = generate_latest(reg).decode()
    assert family in text
    assert text.index("vllm:request_success_total") < text.index(family) < text.index(
        "vllm:time_to_first_token_seconds")
    assert 'vllm:request_prompt_tokens_bucket{engine="0",le="2000.0",model_name="m"} 4.0' in text
    m = read_pod_metrics(text, engine_metrics("vllm"), "m")
    counts = sorted(m.buckets[SignalName.PROMPT_TOKENS_P90].values())
    assert counts[-1] == (float("inf"), len(PROMPTS))


def test_the_simulated_replicas_count_each_finished_requests_prompt() -> None:
    rng = np.random.default_rng(3)
    n = 300
    prompts = rng.integers(10, 40_000, n)
    trace = Trace("t", np.sort(rng.uniform(0, 60, n)), prompts, np.full(n, 20), 0.0)
    clock = FakeClock()
    fleet = RequestFleet(trace, ServingProfile(), COLD_START_PROFILES["warm"], initial_replicas=2)
    d = FleetDriver(fleet, fixed_replicas(2), clock=clock)
    for _ in range(400):  # until every request has finished
        clock.t += 5.0
        d.step()
        if sum(rep.request_success for rep in d.snapshot.replicas) == n:
            break
    finished = total = 0
    hist = np.zeros(len(PROMPT_TOKEN_BUCKETS) + 1)
    for rep in d.snapshot.replicas:
        assert rep.prompt_length is not None
        assert rep.prompt_length.count == rep.request_success
        finished += rep.request_success
        total += rep.prompt_length.sum
        hist += np.asarray(rep.prompt_length.counts)
    assert finished == n and total == prompts.sum()
    expected = np.bincount(np.searchsorted(PROMPT_TOKEN_BUCKETS, prompts, side="left"),
                           minlength=len(PROMPT_TOKEN_BUCKETS) + 1)
    assert np.array_equal(hist, expected)


def test_scraping_the_emulator_gives_the_prompt_histogram_of_the_window(tmp_path) -> None:
    from autoscaler.sources.scrape import ScrapeMetricsSource

    from .helpers import fresh_telemetry, msp
    from .test_emulator import make_server

    server, clock, _ = make_server(tmp_path, replicas=2)
    server.start()
    try:
        tel, _ = fresh_telemetry()
        src = ScrapeMetricsSource(lambda p: [server.replica_url(r.replica_id) for r in server.driver.snapshot.replicas],
                                  telemetry=tel)
        d = server.driver
        d.stop()  # drive the clock by hand
        clock.t += 60
        d.step()
        before = sum(r.request_success for r in d.snapshot.replicas)
        src.collect([msp("m")], clock.t)
        clock.t += 30
        d.step()
        after = sum(r.request_success for r in d.snapshot.replicas)
        h = src.collect([msp("m")], clock.t)["default/m"].prompt_tokens_histogram
        assert h is not None and after > before
        assert h.total == after - before  # one observation per request finished in the window
        assert h.share_within(2000) == 1.0 and h.share_within(100) == 0.0  # prompts 200-1500: buckets (100, 2000]
    finally:
        server.stop()
