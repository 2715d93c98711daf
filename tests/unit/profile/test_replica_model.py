"""The emulator's replica model (the adapter over the simulated fleet's vLLM engine) times requests as the
simulator's own fleet does, request by request, and frees what an aborted request held."""

from __future__ import annotations

import numpy as np
import pytest

from autoscaler.emulator.replica_model import EngineReplica
from simulations.fleet import RequestFleet
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace


@pytest.mark.parametrize(("serving", "queues"), [
    (ServingProfile(prefill_tokens_per_second=2000, itl_base_seconds=0.02, itl_per_sequence_seconds=0.002,
                    max_num_seqs=64), False),
    # few slots, a small token budget (chunked prefill) and a KV cache that runs out (preemption): it queues
    (ServingProfile(prefill_tokens_per_second=5000, max_num_seqs=4, max_num_batched_tokens=512,
                    kv_cache_tokens=2048), True),
])
def test_first_tokens_match_the_fleet(serving: ServingProfile, queues: bool) -> None:
    rng = np.random.default_rng(3)
    n = 400
    arr = np.cumsum(rng.exponential(0.25, n))
    prompt = rng.integers(50, 1500, n)
    out = rng.integers(1, 60, n)
    fleet = RequestFleet(Trace("t", arr, prompt, out, 0.0), serving, COLD_START_PROFILES["warm"],
                         initial_replicas=1)
    fleet.advance(float(arr[-1]) + 10_000)
    out_fleet = fleet.outcome(2.0)  # fills fleet.ttft
    want = np.asarray(fleet.ttft)
    assert not np.isnan(want).any()
    # the second profile queues, preempts and misses the SLO often; the first mostly does not
    assert (fleet.preemptions_total > 0 and out_fleet.attainment < 0.5) == queues

    model = EngineReplica(serving)
    ids = []
    first: dict[int, float] = {}
    for i in range(n):
        ids.append(model.submit(int(prompt[i]), int(out[i]), float(arr[i])))
        # read progress at arrivals, as streams do (reading must not change the timing)
        for j in ids[-5:]:
            p = model.progress(j, float(arr[i]))
            if p.first_token_at is not None:
                first[j] = p.first_token_at
    t = float(arr[-1])
    while len(first) < n:
        t += 0.5
        for j in ids:
            if j not in first:
                p = model.progress(j, t)
                if p.first_token_at is not None:
                    first[j] = p.first_token_at
        assert t < arr[-1] + 10_000
    got = np.array([first[j] for j in ids]) - arr
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_tokens_come_one_step_apart_and_the_request_ends() -> None:
    s = ServingProfile(prefill_tokens_per_second=1000, itl_base_seconds=0.01, itl_per_sequence_seconds=0.0,
                       kv_read_seconds_per_token=0.0, attention_seconds_per_token_pair=0.0)
    m = EngineReplica(s)
    rid = m.submit(100, 5, 0.0)
    p = m.progress(rid, 0.0)
    # the prefill step: base + 100 tokens at 1 ms
    assert p.emitted == 0 and p.next_token_at == pytest.approx(0.11)
    times, t, last = [], 0.0, 0
    while not p.done:
        t = max(t, p.next_token_at or t + 0.001)
        p = m.progress(rid, t)
        if p.emitted > last:
            times.append(t)
            last = p.emitted
    # each decode step: base + one decode token
    assert len(times) == 5 and np.diff(times) == pytest.approx([0.011] * 4)
    assert p.first_token_at == pytest.approx(0.11)


def test_abort_frees_the_slot_and_the_blocks() -> None:
    s = ServingProfile(max_num_seqs=1)
    m = EngineReplica(s)
    a = m.submit(1000, 1000, 0.0)
    b = m.submit(10, 1, 0.0)
    assert m.progress(b, 1.0).emitted == 0  # waits for the only slot
    assert m.engine.used_blocks() > 0
    m.abort(a, 1.0)
    p = m.progress(b, 1.2)
    assert p.done and p.first_token_at is not None and 1.0 < p.first_token_at < 1.2
    assert m.engine.used_blocks() == 0 and not m.engine.busy_with_work()


def test_a_long_run_keeps_no_finished_requests() -> None:
    m = EngineReplica(ServingProfile())
    for k in range(50):
        rid = m.submit(100, 3, 10.0 * k)
        p = m.progress(rid, 10.0 * k + 5)
        assert p.done
        m.forget(rid)
    assert len(m.book.arr) == 1 and not m.done  # fresh engines while idle: one request in the last
