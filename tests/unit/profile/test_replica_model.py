"""The emulator's replica model (the adapter over today's serving model) times requests as the simulator's
own fleet does, request by request, and frees what an aborted request held."""

from __future__ import annotations

import numpy as np
import pytest

from autoscaler.emulator.replica_model import ServingProfileReplica
from simulations.fleet import RequestFleet
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace


@pytest.mark.parametrize("serving", [
    ServingProfile(prefill_tokens_per_second=2000, itl_base_seconds=0.02, itl_per_sequence_seconds=0.002,
                   max_num_seqs=64),
    ServingProfile(prefill_tokens_per_second=5000, max_num_seqs=4, kv_cache_tokens=6000),  # slots, KV bind
])
def test_first_tokens_match_the_fleet(serving: ServingProfile) -> None:
    rng = np.random.default_rng(3)
    n = 400
    arr = np.cumsum(rng.exponential(0.25, n))
    prompt = rng.integers(50, 1500, n)
    out = rng.integers(1, 60, n)
    fleet = RequestFleet(Trace("t", arr, prompt, out, 0.0), serving, COLD_START_PROFILES["warm"],
                         initial_replicas=1)
    fleet.advance(float(arr[-1]) + 10_000)
    fleet.outcome(2.0)  # fills fleet.ttft
    want = np.asarray(fleet.ttft)

    model = ServingProfileReplica(serving)
    ids = []
    got = np.full(n, np.nan)
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
                if p.first_token_at is not None or p.done:
                    first[j] = p.first_token_at if p.first_token_at is not None else np.nan
    for j, ft in first.items():
        got[j] = ft - arr[j]
    finite = ~np.isnan(got)
    assert finite.sum() > n * 0.5  # most were read before finishing
    np.testing.assert_allclose(got[finite], want[finite], atol=1e-6)


def test_tokens_come_one_step_apart_and_the_request_ends() -> None:
    s = ServingProfile(prefill_tokens_per_second=1000, itl_base_seconds=0.01, itl_per_sequence_seconds=0.0)
    m = ServingProfileReplica(s)
    rid = m.submit(100, 5, 0.0)
    p = m.progress(rid, 0.0)
    assert p.emitted == 0 and p.next_token_at == pytest.approx(0.1)
    times, t, last = [], 0.0, 0
    while not p.done:
        t = max(t, p.next_token_at or t + 0.001)
        p = m.progress(rid, t)
        if p.emitted > last:
            times.append(t)
            last = p.emitted
    assert len(times) == 5 and np.diff(times) == pytest.approx([0.01] * 4)


def test_abort_frees_the_slot() -> None:
    s = ServingProfile(max_num_seqs=1)
    m = ServingProfileReplica(s)
    a = m.submit(1000, 1000, 0.0)
    b = m.submit(10, 1, 0.0)
    assert m.progress(b, 1.0).emitted == 0  # waits for the only slot
    m.abort(a, 1.0)
    p = m.progress(b, 1.0 + 10 / s.prefill_tokens_per_second + 1e-9)
    assert p.done and m.kv_used == 0
