"""Fleet: lifecycle, GPU-hours accounting, serving model, the emulator's API, analytic queueing, fidelity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from simulations.fleet import RequestFleet
from simulations.histograms import TTFT_BUCKETS
from simulations.profiles import COLD_START_PROFILES, ClusterSpec, ColdStartProfile, ServingProfile
from simulations.trace import Trace

from .conftest import poisson_trace

NO_SPREAD = ColdStartProfile(name="fixed", scheduling_seconds=2, node_provisioning_seconds=100, image_pull_seconds=300,
                             image_preloaded=False, weight_load_seconds=20, warmup_seconds=60, spread=0.0, free_gpus=0)


def _one(prompt: int, output: int, t: float = 0.0) -> Trace:
    return Trace("one", np.array([t]), np.array([prompt]), np.array([output]), 0.0)


def test_ttft_is_one_prefill_step_on_an_idle_replica(serving: ServingProfile) -> None:
    f = RequestFleet(_one(1500, 10), serving, COLD_START_PROFILES["warm"], initial_replicas=1)
    f.advance(5)
    step = serving.itl_base_seconds + 1500 / serving.prefill_tokens_per_second \
        + 1500 * 1501 / 2 * serving.attention_seconds_per_token_pair
    assert f.outcome(2.0).ttft_p50_seconds == pytest.approx(step)


def test_decode_steps_slow_down_as_the_context_grows(serving: ServingProfile) -> None:
    f = RequestFleet(_one(150, 101), serving, COLD_START_PROFILES["warm"], initial_replicas=1)
    f.advance(10)
    snap = f.replica_snapshots(10)[0]
    prefill = serving.itl_base_seconds + 150 / serving.prefill_tokens_per_second \
        + 150 * 151 / 2 * serving.attention_seconds_per_token_pair
    # decode step k computes token 151 + k, attending that many tokens
    kv = serving.kv_read_seconds_per_token
    decode = sum(serving.itl_base_seconds + serving.decode_token_seconds(0) + (151 + k) * kv for k in range(100))
    assert snap.e2e_latency.sum == pytest.approx(prefill + decode)
    assert snap.generation_tokens == pytest.approx(101)
    assert snap.request_success == 1 and snap.running == 0 and snap.waiting == 0


def test_lifecycle_new_node_then_pull_load_warmup(serving: ServingProfile) -> None:
    trace = _one(10, 2, t=1000)
    f = RequestFleet(trace, serving, NO_SPREAD, ClusterSpec(gpus_per_node=1), initial_replicas=1)
    f.set_target(2, 0.0)
    counts = f.replica_counts(50)
    assert counts.desired == 2 and counts.ready == 1
    assert counts.starting[0].stage == "node_provisioning"
    assert f.replica_counts(150).starting[0].stage == "image_pull"
    assert f.replica_counts(410).starting[0].stage == "weight_load"
    assert f.replica_counts(470).starting[0].stage == "warmup"
    f.advance(480.5)
    assert f.ready_replicas == 2
    stages = [(o.stage, round(o.seconds), o.situation) for o in f.take_observations(481)]
    assert stages == [("node_provisioning", 100, "default"), ("image_pull", 300, "uncached"),
                      ("weight_load", 20, "default"), ("warmup", 60, "default")]


def test_gpu_hours_run_from_request_to_gone(serving: ServingProfile) -> None:
    f = RequestFleet(_one(10, 2, t=5000), serving, NO_SPREAD, initial_replicas=1)
    f.set_target(3, 0.0)
    f.set_target(1, 1800.0)  # both extra replicas leave; they had no requests, so they go at once
    f.advance(3600)
    assert f.gpu_seconds() / 3600 == pytest.approx(1.0 + 2 * 0.5)


def test_scale_down_removes_starting_replicas_first(serving: ServingProfile) -> None:
    f = RequestFleet(_one(10, 2, t=5000), serving, NO_SPREAD, initial_replicas=2)
    f.set_target(4, 0.0)
    f.set_target(2, 10.0)
    c = f.replica_counts(10)
    assert c.ready == 2 and len(c.starting) == 0


def test_draining_replica_finishes_running_requests(serving: ServingProfile) -> None:
    trace = Trace("d", np.array([0.0, 0.0]), np.array([100, 100]), np.array([1000, 1000]), 0.0)
    f = RequestFleet(trace, serving, COLD_START_PROFILES["warm"], initial_replicas=2)
    f.advance(1.0)
    f.set_target(1, 1.0)
    assert f.replica_counts(1.0).terminating == 1
    f.advance(60)
    assert f.outcome(2.0).unserved == 0
    assert f.replica_counts(60).terminating == 0


def test_freed_gpu_is_reused_fast_until_the_node_is_removed(serving: ServingProfile) -> None:
    cluster = ClusterSpec(gpus_per_node=1, node_idle_removal_seconds=600)
    f = RequestFleet(_one(10, 2, t=9000), serving, NO_SPREAD, cluster, initial_replicas=2)
    f.set_target(1, 0.0)
    assert f.cluster_facts(10).free_replica_slots == 1
    f.set_target(2, 10.0)
    assert f.replica_counts(11).starting[0].stage == "scheduling"
    f.set_target(1, 20.0)
    f.set_target(2, 20.0 + 700)
    assert f.replica_counts(721).starting[0].stage == "node_provisioning"


def test_kv_exhaustion_preempts_by_recompute() -> None:
    """625 blocks of 16 tokens: 20 requests of 1000 + 1000 tokens are all admitted while blocks last, their
    decodes then run the cache out and the newest are preempted (back to waiting), as vLLM V1 does."""
    serving = ServingProfile(kv_cache_tokens=10_000)
    n = 20
    trace = Trace("kv", np.zeros(n), np.full(n, 1000), np.full(n, 1000), 0.0)
    f = RequestFleet(trace, serving, COLD_START_PROFILES["warm"], initial_replicas=1)
    snap = f.replica_snapshots(2.0)[0]
    assert snap.running + snap.waiting == n and snap.waiting > 0
    assert snap.kv_cache_usage > 0.9
    f.advance(600)
    assert f.outcome(2.0).unserved == 0 and f.success_total == n
    assert f.preemptions_total > 0
    assert f.replica_snapshots(600)[0].preemptions == f.preemptions_total
    assert f.replica_snapshots(600)[0].kv_cache_usage == 0


def test_snapshot_histograms_use_vllm_buckets_and_are_cumulative(serving: ServingProfile) -> None:
    f = RequestFleet(poisson_trace(5, 60), serving, COLD_START_PROFILES["warm"], initial_replicas=1)
    snaps = f.replica_snapshots(120)
    h = snaps[0].ttft
    assert h.bounds == TTFT_BUCKETS
    cum = h.cumulative()
    assert cum[-1] == h.count == snaps[0].request_success
    assert all(a <= b for a, b in itertools.pairwise(cum))
    assert snaps[0].inter_token_latency.count > 0


def test_time_only_moves_forward(serving: ServingProfile) -> None:
    f = RequestFleet(_one(10, 2), serving, COLD_START_PROFILES["warm"])
    f.advance(10)
    with pytest.raises(ValueError, match="forward"):
        f.advance(5)


def _erlang_c(c: int, a: float) -> float:
    """Probability of waiting in M/M/c with offered load a = λ/μ."""
    s = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (s + top)


def _mm_fleet(c: int, rho: float, n: int, seed: int) -> tuple[np.ndarray, float, float]:
    """One sequence per replica, no prefill, exponential decode time (mean 1 s): an M/M/· server."""
    rng = np.random.default_rng(seed)
    serving = ServingProfile(max_num_seqs=1, prefill_tokens_per_second=1e12, itl_base_seconds=0.01,
                             itl_per_sequence_seconds=0.0, kv_read_seconds_per_token=0.0,
                             attention_seconds_per_token_pair=0.0)
    lam = rho * c
    t = np.cumsum(rng.exponential(1 / lam, n))
    out = np.maximum(1, np.round(rng.exponential(100.0, n))).astype(np.int64)
    trace = Trace("mm", t, np.ones(n, dtype=np.int64), out, 0.0)
    f = RequestFleet(trace, serving, COLD_START_PROFILES["warm"], initial_replicas=c)
    f.advance(t[-1] + 1000)
    mu = 1.0 / (float(np.mean(out)) * 0.01)  # a prefill step, then one step per further token
    return np.asarray(f.book.qt), lam, mu


def test_single_replica_matches_mm1() -> None:
    qt, lam, mu = _mm_fleet(1, 0.7, 40000, seed=7)
    rho = lam / mu
    assert np.mean(qt > 1e-9) == pytest.approx(rho, abs=0.02)  # P(wait) = ρ
    assert np.mean(qt) == pytest.approx(rho / (mu - lam), rel=0.1)  # W_q = ρ / (μ − λ)


def test_static_fleet_waits_between_mmc_and_independent_mm1() -> None:
    """Join-the-shortest-queue over c replicas can do no better than one central queue (M/M/c, Erlang C)
    and no worse than routing at random (c independent M/M/1 at λ/c)."""
    c = 4
    qt, lam, mu = _mm_fleet(c, 0.7, 40000, seed=11)
    a = lam / mu
    mmc_wait = _erlang_c(c, a) / (c * mu - lam)
    rho = a / c
    mm1_wait = rho / (mu - lam / c)
    assert mmc_wait * 0.9 <= np.mean(qt) <= mm1_wait


def test_fluid_scale_down_drains_like_the_request_level_fleet(serving: ServingProfile) -> None:
    """A removed replica keeps serving what it runs until done (GPU time counts until then), in both fleets."""
    from simulations.fluid import FluidFleet

    trace = poisson_trace(4, 120, seed=2, prompt=200, output=1500)
    req = RequestFleet(trace, serving, COLD_START_PROFILES["warm"], initial_replicas=2, per_replica_histograms=False)
    flu = FluidFleet(trace.binned(1.0), serving, COLD_START_PROFILES["warm"], initial_replicas=2)
    for f in (req, flu):
        f.set_target(1, 60.0)
        assert f.replica_counts(61.0).terminating == 1  # draining, not gone
    drained = {}
    for name, f in (("request", req), ("fluid", flu)):
        t = 61.0
        while f.replica_counts(t).terminating and t < 600:
            t += 1.0
            f.advance(t)
        drained[name] = t
    assert 65 < drained["request"] < 200 and 65 < drained["fluid"] < 200
    assert drained["fluid"] == pytest.approx(drained["request"], rel=0.35)
    req.advance(600)
    flu.advance(600)
    assert flu.gpu_seconds(600) == pytest.approx(req.gpu_seconds(600), rel=0.05)
