"""Decide sequences under fuzzing: restarts, clocks going backwards, extreme valid policies, garbage.

The seeded fuzzer of benchmarks/fuzz_decide.py runs here at a small size (the full 10,000-case run is the
benchmark); hypothesis drives the same invariants from its own strategies."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState, Measured, ReplicaCounts, Signals, StartingReplica, decide
from autoscaler.policy import PolicySpec

from .helpers import policy


def _fuzzer() -> ModuleType:
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "fuzz_decide.py"
    spec = importlib.util.spec_from_file_location("fuzz_decide", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_decide"] = module
    spec.loader.exec_module(module)
    return module


def test_seeded_fuzz_of_decide_sequences_finds_nothing() -> None:
    report = _fuzzer().fuzz(cases=120, seed=7)
    assert report.failures == []
    assert report.cases == 120 and report.calls > 1000
    assert report.restarts > 0 and report.clock_backwards > 0 and report.stale_ticks > 0


def test_the_fuzzer_catches_a_scale_down_on_stale_data() -> None:
    """The fuzzer's oracle can fail: a core that ignores staleness is caught."""
    fz: Any = _fuzzer()  # patched below: its `decide` is swapped for a careless one
    real = fz.decide

    def careless(pol, sig, state, now, fcfg=None):
        fresh = Measured(0.0, 0.0)
        blind = replace(sig, prompt_tokens_rate=fresh, generation_tokens_rate=fresh, request_rate=fresh,
                        waiting=fresh, kv_cache_usage=fresh)
        return real(pol, blind, state, now, fcfg)

    fz.decide = careless
    try:
        report = fz.fuzz(cases=40, seed=3)
    finally:
        fz.decide = real
    assert any("untrusted data" in f for f in report.failures)


EXTREME: list[PolicySpec] = [
    policy(),
    policy(replicas={"min": 0, "max": 1}, forecast={"enabled": True, "stepSeconds": 1, "historySeconds": 60},
           scaleDown={"stabilizationWindowSeconds": 1, "maxStepReplicas": 1000, "maxStepPercent": 100,
                      "periodSeconds": 1}),
    policy(replicas={"min": 3, "max": 10_000}, capacity={"maxConcurrency": 1, "targetUtilization": 1e-3,
                                                          "promptTokensPerSecond": 1, "generationTokensPerSecond": 1},
           scaleUp={"maxStepPercent": 1000, "periodSeconds": 86400, "panic": {"holdSeconds": 86400}},
           metrics={"stalenessSeconds": 1}),
    policy(forecast={"enabled": True, "method": "seasonal", "stepSeconds": 3600, "historySeconds": 5 * 7 * 86400},
           coldStart={"nodeProvisioningSeconds": 7200, "imagePullSeconds": 7200, "spread": 1,
                      "quantile": 0.999}, onMissingMetrics={"action": "fixed", "replicas": 50},
           intervalSeconds=3600),
]

value = st.one_of(st.none(), st.floats(0, 1e4), st.just(math.nan), st.just(math.inf), st.just(-1.0),
                  st.just(1e308), st.just(2.0))
age = st.one_of(st.floats(0, 100), st.just(math.nan), st.just(-1.0), st.just(math.inf), st.floats(100, 1e7))
measured = st.builds(Measured, value, age)
stage = st.sampled_from(["scheduling", "node_provisioning", "image_pull", "weight_load", "warmup"])
starting = st.lists(st.builds(StartingReplica, stage=stage, age_seconds=st.floats(0, 1e5), stage_age_seconds=age,
                              unschedulable=st.booleans()), max_size=4).map(tuple)
step = st.one_of(st.just(15.0), st.just(0.0), st.floats(-86400, 0), st.floats(0, 40 * 86400))
tick = st.tuples(step, st.fixed_dictionaries({
    "request_rate": measured, "prompt_tokens_rate": measured, "generation_tokens_rate": measured,
    "running": measured, "waiting": measured, "kv_cache_usage": measured,
    "queue_time_p90_seconds": measured, "ttft_p90_seconds": measured}), starting,
    st.sampled_from(["keep", "keep", "keep", "restore", "lose"]))


def _trusted(m: Measured, stale: float) -> bool:
    v = m.value
    return v is not None and 0 <= m.age_seconds <= stale and math.isfinite(v) and 0 <= v < 1e300


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pol=st.sampled_from(EXTREME), ticks=st.lists(tick, min_size=1, max_size=20), start=st.integers(0, 200),
       t0=st.floats(0, 4e9))
def test_decide_sequences_hold_their_invariants(pol: PolicySpec, ticks: list, start: int, t0: float) -> None:
    state, current, t = CoreState(), start, t0
    stale = pol.metrics.staleness_seconds
    for dt, loads, starts, restart in ticks:
        t += dt
        sig = Signals(**loads, replicas=ReplicaCounts(desired=current, ready=current, starting=starts))
        # This thread's CPU time: the machine may be shared, and the process's CPU time also counts BLAS
        # threads that spin while other processes hold the cores (it once read 1.18 s; alone, the slowest
        # call takes 0.12 s).
        began = time.thread_time()
        r = decide(pol, sig, state, t)
        assert time.thread_time() - began < 1.0
        d = r.decision.desired_replicas
        assert d is not None and pol.replicas.min <= d <= pol.replicas.max
        demand_trusted = all(_trusted(loads[n], stale) for n in
                             ("prompt_tokens_rate", "generation_tokens_rate", "request_rate", "waiting"))
        if not demand_trusted or r.decision.missing_signals:
            assert d >= min(current, pol.replicas.max), r.decision.message
        blob = json.dumps(r.state.to_dict(), allow_nan=False)  # a Kubernetes status holds strict JSON
        state = {"keep": r.state, "restore": CoreState.from_dict(json.loads(blob)), "lose": CoreState()}[restart]
        current = d
