"""The simulated engine follows vLLM V1's scheduler: token budget, chunked prefill, WAITING vs RUNNING,
KV blocks and preemption by recompute, prefix caching, and the overload a too-small fleet shows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simulations.engine_step import Book, Engine, StepCost
from simulations.fleet import RequestFleet
from simulations.histograms import REQUEST_LATENCY_BUCKETS, quantile_from_counts
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace


def _engine(prompts: list[int], outputs: list[int], serving: ServingProfile | None = None,
            hashes: list[tuple[int, ...]] | None = None) -> tuple[Engine, Book]:
    serving = serving or ServingProfile()
    book = Book([0.0] * len(prompts), prompts, outputs, tuple(hashes) if hashes else None, [0])
    return Engine(serving, book, None, "ready", True), book


def _until_idle(e: Engine, limit: int = 100_000) -> list[float]:
    """Run the engine's events until it is idle; the event times."""
    times = []
    while not e.idle and limit:
        t = e.end
        e.event(t)
        times.append(t)
        limit -= 1
    return times


def test_token_budget_is_shared_and_the_last_admitted_prefill_is_chunked() -> None:
    e, book = _engine([5000, 5000, 5000], [10, 10, 10])
    e.arrive_together([0, 1, 2], 0.0)
    # step 1: request 0 whole (5000), request 1 a chunk of 3192; request 2 does not get any budget
    assert e.chunks == [(0, 0, 5000), (1, 0, 3192)]
    assert e.running == 2 and len(e.waiting) == 1
    assert book.qt[0] == book.qt[1] == 0.0 and np.isnan(book.qt[2])  # queue time ends at first scheduled
    cost = StepCost.of(ServingProfile())
    assert e.end == pytest.approx(cost.step(0, 0, e.chunks))
    t1 = e.end
    e.event(t1)
    # step 2: request 0 decodes (1 token), request 1 finishes its prompt (1808), request 2 gets the rest
    assert book.ttft[0] == pytest.approx(t1) and np.isnan(book.ttft[1])
    assert e.chunks == [(1, 3192, 1808), (2, 0, 5000)]
    assert book.qt[2] == pytest.approx(t1)
    assert e.running == 3 and len(e.waiting) == 0
    _until_idle(e)
    assert book.success_total == 3 and e.used_blocks() == 0


def test_a_long_prompt_is_prefilled_in_chunks_and_slows_the_decodes_beside_it() -> None:
    serving = ServingProfile()
    e, book = _engine([100, 20_000], [400, 5])
    e.arrive(0, 0.0)
    e.event(e.end)  # request 0 prefilled: it decodes from now on
    quiet = e.d0  # a decode-only step (the engine is in a run of them)
    e.arrive(1, e.t0 + quiet / 2)
    e.event(e.end)
    steps = []
    while np.isnan(book.ttft[1]):
        steps.append(e.end - e.t0)
        e.event(e.end)
    assert len(steps) == 3  # 8191 + 8191 + 3618 tokens: chunked prefill, one decode token beside each chunk
    assert min(steps) > 20 * quiet  # the decoding request waits for each chunk's step: its ITL jumps
    assert e.v >= 4  # request 0 decoded in each of those steps (and the one before)
    _until_idle(e)
    assert book.success_total == 2
    assert serving.max_num_batched_tokens == 8192 and serving.max_num_seqs == 1024


def test_max_num_seqs_keeps_requests_waiting() -> None:
    e, book = _engine([100] * 5, [50] * 5, ServingProfile(max_num_seqs=2, max_num_batched_tokens=2048))
    e.arrive_together([0, 1, 2, 3, 4], 0.0)
    assert e.running == 2 and len(e.waiting) == 3
    _until_idle(e)
    assert book.success_total == 5
    assert book.qt[2] > 0 and book.qt[4] > book.qt[2]


def test_kv_exhaustion_preempts_the_newest_running_request_by_recompute() -> None:
    # 40 blocks of 16 tokens; two requests whose decodes need more than that together
    serving = ServingProfile(kv_cache_tokens=640, max_num_seqs=8, max_num_batched_tokens=1024)
    e, book = _engine([200, 200], [300, 300], serving)
    e.arrive_together([0, 1], 0.0)
    seen_preempted = False
    while not e.idle:
        e.event(e.end)
        assert e.used_blocks() <= e.total_blocks
        if e.preemptions and not seen_preempted:
            seen_preempted = True
            # the newest (request 1) went back to the head of WAITING with nothing computed
            assert list(e.waiting) == [1] and book.computed[1] == 0 and e.running == 1
    assert seen_preempted and book.preempt_total == e.preemptions >= 1
    assert book.success_total == 2 and book.emitted == [300, 300]
    assert book.qt[1] == 0.0  # queue time is to the first SCHEDULED; later preemptions do not count


def test_prefix_cache_hits_skip_the_cached_blocks() -> None:
    shared = tuple(range(60))  # 60 full blocks = 960 tokens of shared prefix
    prompts, outputs = [1000, 1000], [2, 2]
    e, _book = _engine(prompts, outputs, hashes=[(*shared, 1000), (*shared, 2000)])
    e.arrive(0, 0.0)
    first = e.end
    _until_idle(e)
    e.arrive(1, 10.0)
    assert e.chunks == [(1, 960, 40)]  # only the uncached 40 tokens are computed
    second = e.end - 10.0
    assert second < first / 3
    _until_idle(e)
    # without hashes the same request computes its whole prompt
    e2, _ = _engine(prompts, outputs)
    e2.arrive(0, 0.0)
    _until_idle(e2)
    e2.arrive(1, 10.0)
    assert e2.chunks == [(1, 0, 1000)]


def test_cached_blocks_nobody_holds_are_evicted_when_space_is_needed() -> None:
    serving = ServingProfile(kv_cache_tokens=1600, max_num_batched_tokens=2048)  # 100 blocks
    a = tuple(range(60))
    b = tuple(range(100, 160))
    e, book = _engine([1000, 1000, 1000], [2, 2, 2], serving, hashes=[a, b, a])
    e.arrive(0, 0.0)
    _until_idle(e)
    e.arrive(1, 5.0)  # needs 63 blocks: most of request 0's cached ones are evicted
    _until_idle(e)
    e.arrive(2, 10.0)
    assert e.chunks[0][1] < 960  # request 0's prefix is no longer (wholly) cached
    _until_idle(e)
    assert book.success_total == 3


def _burst(n: int = 400, prompt: int = 1000, output: int = 200, start: float = 30.0) -> Trace:
    t = start + np.linspace(0.0, 1.0, n)
    return Trace("burst", t, np.full(n, prompt), np.full(n, output), 0.0)


def test_an_overload_shows_waiting_and_queue_time_at_scrapes_and_none_when_idle() -> None:
    """400 prompts of 1,000 tokens within a second on 2 replicas: prefill takes ~14 s, so scrapes during the
    burst see requests waiting and queue time rising; before and after, both are zero."""
    f = RequestFleet(_burst(), ServingProfile(), COLD_START_PROFILES["warm"], initial_replicas=2)
    samples = [f.scrape(float(t)) for t in range(0, 121, 5)]
    by_t = {s.time: s for s in samples}

    def queue_p90(a: float, b: float) -> float | None:
        d = [x - y for x, y in zip(by_t[b].queue_time_counts, by_t[a].queue_time_counts, strict=True)]
        return quantile_from_counts(0.9, REQUEST_LATENCY_BUCKETS, d)

    for t in (0.0, 25.0):  # idle before the burst
        assert by_t[t].waiting == 0 and by_t[t].running == 0
    during = [s for s in samples if 31 <= s.time <= 40]
    assert during and all(s.waiting > 0 for s in during)
    assert all(s.running > 0 for s in during)
    qp = queue_p90(30.0, 60.0)
    assert qp is not None and qp > 2.0  # finished requests report their time in WAITING
    after = [s for s in samples if s.time >= 100]
    assert all(s.waiting == 0 and s.running == 0 for s in after)
    assert queue_p90(105.0, 120.0) is None  # nothing finished while idle: no queue-time observations
    o = f.outcome(2.0)
    assert o.queue_p99_seconds > 5.0 and o.unserved == 0


def test_mooncake_hash_ids_drive_prefix_caching(tmp_path: Path) -> None:
    from simulations.trace_loaders import load_jsonl

    rows = [{"timestamp": 0, "input_length": 2000, "output_length": 5, "hash_ids": list(range(125))},
            {"timestamp": 5000, "input_length": 2000, "output_length": 5,
             "hash_ids": [*range(120), 900, 901, 902, 903, 904]}]
    p = tmp_path / "mooncake.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trace = load_jsonl(p)
    assert trace.block_hashes is not None and len(trace.block_hashes[1]) == 125
    f = RequestFleet(trace, ServingProfile(), COLD_START_PROFILES["warm"], initial_replicas=1)
    f.advance(60)
    first, second = f.book.ttft
    assert second < first / 5  # 120 of its 125 blocks were cached: only 80 tokens are prefilled
    plain = Trace("plain", trace.arrival_s, trace.prompt_tokens, trace.output_tokens, 0.0)
    g = RequestFleet(plain, ServingProfile(), COLD_START_PROFILES["warm"], initial_replicas=1)
    g.advance(60)
    assert g.book.ttft[1] == pytest.approx(first)  # without hashes: no prefix caching


def test_default_replica_matches_vllms_h100_latency_test() -> None:
    """vLLM's nightly `latency_llama8B_tp1` on one H100 (8 × 32-token prompts, 128 output tokens each, one
    batch): 997.5 ms measured (docs/vllm-replica-model.md, calibration); the simulated replica within 5 %."""
    from benchmarks.calibrate_replica import MEASURED_MS, TOLERANCE, simulated_batch_latency

    sim = simulated_batch_latency(ServingProfile(max_num_batched_tokens=16384))
    assert abs(sim * 1000 / MEASURED_MS - 1) <= TOLERANCE
    # and the latency follows the step model: twice the output, about twice the decode time
    longer = simulated_batch_latency(ServingProfile(max_num_batched_tokens=16384), output=256)
    assert 1.9 < longer / sim < 2.1
