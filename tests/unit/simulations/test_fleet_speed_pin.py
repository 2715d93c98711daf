"""Pins what short seeded request-level replays produce, so the fleet's speed work cannot change results.

Each case drives a `RequestFleet` through a fixed script (scale-ups through a GPU quota, scale-downs that
drain loaded replicas (their queues stay with them), a spell at zero replicas with requests waiting at
the gateway, KV- and slot-bound admission, one-token outputs) and records everything the public API shows:
the outcome, GPU-seconds, every scrape, every per-replica snapshot, replica counts and cold-start
observations. The expected values were taken from the fleet before it was optimised (re-pinned when the
replica became vLLM V1's step-level scheduler, simulations/engine_step.py, which changed every number; and
when scale-down became a terminating pod that keeps its own queue and is picked by deletion cost, with ties
broken as the ReplicaSet does, docs/scale-down.md):
- `digest` is a SHA-256 of the whole trajectory (floats as `repr`): bit-for-bit the same results;
- the headline numbers are also listed, so a failure says what moved, and by how much.
No autoscaler is involved (the decision core changes independently of the fleet).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import pytest

from simulations.fleet import RequestFleet
from simulations.profiles import COLD_START_PROFILES, ClusterSpec, ServingProfile
from simulations.scenario import bundled_path
from simulations.trace import Trace
from simulations.trace_loaders import load_azure_csv

from .conftest import poisson_trace

SLO = 2.0


def _replay(trace: Trace, serving: ServingProfile, cold: str, cluster: ClusterSpec, initial: int,
            script: dict[float, int], end: float, detail: bool = True) -> tuple[RequestFleet, list[Any]]:
    f = RequestFleet(trace, serving, COLD_START_PROFILES[cold], cluster, initial_replicas=initial, seed=5,
                     per_replica_histograms=detail)
    log: list[Any] = []
    t = 0.0
    while t <= end:
        if t in script:
            f.set_target(script[t], t)
        s = f.scrape(t)
        log.append(("scrape", s.time, s.prompt_tokens, s.generation_tokens, s.request_success, s.queue_time_counts,
                    s.ttft_counts, s.running, s.waiting, s.kv_cache_usage, s.reporting_replicas, s.preemptions))
        c = f.replica_counts(t)
        log.append(("counts", c.desired, c.ready, c.terminating,
                    tuple((r.stage, r.age_seconds, r.stage_age_seconds, r.unschedulable) for r in c.starting)))
        log.append(("obs", tuple((o.stage, o.seconds, o.situation) for o in f.take_observations(t))))
        log.append(("gpu", f.gpu_seconds(t), f.in_flight, f.ready_replicas))
        if t % 60 == 0:
            for r in f.replica_snapshots(t):
                log.append(("snap", r.replica_id, r.phase, r.running, r.waiting, r.kv_cache_usage, r.prompt_tokens,
                            r.generation_tokens, r.request_success, r.preemptions,
                            *((h.counts, h.sum, h.count) for h in (r.queue_time, r.ttft, r.e2e_latency,
                                                                   r.inter_token_latency))))
        t += 15.0
    f.advance(end + 900.0)
    return f, log


def _digest(log: list[Any]) -> str:
    return hashlib.sha256(repr(log).encode()).hexdigest()


def _poisson_quota() -> tuple[RequestFleet, list[Any]]:
    # ~20 req/s for 10 min on a quota of 10 GPUs (2 per node): scale-ups wait for quota, scale-downs drain
    # loaded replicas, and at 300 s the fleet goes to zero for a while (requests wait at the gateway).
    trace = poisson_trace(20, 600, seed=3, prompt=1000, output=200)
    script = {30.0: 6, 120.0: 12, 195.0: 3, 300.0: 0, 315.0: 5, 450.0: 2, 540.0: 8}
    return _replay(trace, ServingProfile(), "typical", ClusterSpec(gpus_per_node=2, max_gpus=10), 2, script, 660.0)


def _poisson_tight() -> tuple[RequestFleet, list[Any]]:
    # KV- and slot-bound replicas (admission stalls), outputs of 1-3 tokens (some finish at first token).
    serving = ServingProfile(kv_cache_tokens=30_000, max_num_seqs=12, prefill_tokens_per_second=40_000)
    trace = poisson_trace(25, 300, seed=8, prompt=3000, output=2)
    mixed = poisson_trace(6, 300, seed=9, prompt=800, output=600)
    t = np.concatenate([trace.arrival_s, mixed.arrival_s])
    order = np.argsort(t, kind="stable")
    both = Trace("mixed", t[order], np.concatenate([trace.prompt_tokens, mixed.prompt_tokens])[order],
                 np.concatenate([trace.output_tokens, mixed.output_tokens])[order], 0.0)
    script = {45.0: 8, 150.0: 2, 210.0: 6}
    return _replay(both, serving, "warm", ClusterSpec(), 3, script, 330.0)


def _azure_code() -> tuple[RequestFleet, list[Any]]:
    # The bundled Azure code slice, cloned 2×, as the runner builds it (fleet totals only).
    trace = load_azure_csv(bundled_path("azure_code_slice.csv")).window(0, 900).clone(2, seed=1)
    script = {0.0: 4, 60.0: 9, 240.0: 5, 420.0: 3, 600.0: 7, 780.0: 4}
    return _replay(trace, ServingProfile(), "cold", ClusterSpec(), 4, script, 960.0, detail=False)


EXPECTED: dict[str, dict[str, Any]] = {
    'azure_code': {   'digest': 'ae0e97b16e07ceae1f29f195e005f7e537d28abccb47c5374532b427287018c9',
                      'requests': 5196.0,
                      'attainment': 0.5764049268668207,
                      'ttft_p50': 1.2340515267899406,
                      'ttft_p90': 15.288337163020458,
                      'ttft_p99': 20.566265994401217,
                      'queue_p99': 19.89771160432936,
                      'unserved': 0.0,
                      'scale_events': 5,
                      'gpu_seconds': 8880.0,
                      'ttft_sum': 23240.37288515372,
                      'queue_sum': 20763.56261557024,
                      'gen_total': 150274.0,
                      'prompt_total': 10434318.0,
                      'success_total': 5196,
                      'preemptions': 0},
    'poisson_quota': {   'digest': 'd745e1cc5993440a16911189acbfbac8beccad697329dca8bf94c8315ad82fae',
                         'requests': 11818.0,
                         'attainment': 0.5840243696056863,
                         'ttft_p50': 0.31292572944858676,
                         'ttft_p90': 105.79633517541193,
                         'ttft_p99': 149.6573691520424,
                         'queue_p99': 149.4361427113089,
                         'unserved': 0.0,
                         'scale_events': 7,
                         'gpu_seconds': 10843.879174575915,
                         'ttft_sum': 304197.29189478053,
                         'queue_sum': 301535.55486307625,
                         'gen_total': 2372500.0,
                         'prompt_total': 11813922.0,
                         'success_total': 11818,
                         'preemptions': 211},
    'poisson_tight': {   'digest': '8f29e19749c3eae4cc5b2a9b15cd9d24993195a535acb436333809f7d5960343',
                         'requests': 9309.0,
                         'attainment': 0.19905467826834247,
                         'ttft_p50': 14.028773351768905,
                         'ttft_p90': 101.9213169754317,
                         'ttft_p99': 136.40916299316487,
                         'queue_p99': 136.34090728880227,
                         'unserved': 0.0,
                         'scale_events': 3,
                         'gpu_seconds': 7241.703800500072,
                         'ttft_sum': 297728.53667167627,
                         'queue_sum': 296934.2162211631,
                         'gen_total': 1125507.0,
                         'prompt_total': 23893651.0,
                         'success_total': 9309,
                         'preemptions': 0}}


CASES = {"poisson_quota": _poisson_quota, "poisson_tight": _poisson_tight, "azure_code": _azure_code}


def _summary(f: RequestFleet, log: list[Any]) -> dict[str, Any]:
    o = f.outcome(SLO)
    return {
        "digest": _digest(log), "requests": o.requests, "attainment": o.attainment, "ttft_p50": o.ttft_p50_seconds,
        "ttft_p90": o.ttft_p90_seconds, "ttft_p99": o.ttft_p99_seconds, "queue_p99": o.queue_p99_seconds,
        "unserved": o.unserved, "scale_events": o.scale_events, "gpu_seconds": f.gpu_seconds(),
        "ttft_sum": float(np.nansum(f.ttft)), "queue_sum": float(np.nansum(f.queue_time)),
        "gen_total": f.gen_total, "prompt_total": f.prompt_total, "success_total": f.success_total,
        "preemptions": f.preemptions_total,
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_replay_outcome_is_pinned(case: str) -> None:
    got = _summary(*CASES[case]())
    want = EXPECTED[case]
    for key, value in want.items():
        if key == "digest":
            continue
        if isinstance(value, float) and not math.isfinite(value):
            assert got[key] == value, key
        else:
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert got["digest"] == want["digest"], "same headline numbers, but some scrape/snapshot value moved"


if __name__ == "__main__":  # print EXPECTED for the current fleet
    import pprint
    pprint.pprint({name: _summary(*make()) for name, make in sorted(CASES.items())}, sort_dicts=False, width=118)
