"""TTFT budgets that grow with the prompt, prefill-bound misses, and the infeasible share."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from autoscaler.core import CoreState, Measured, Signals, decide
from autoscaler.core.signals import LatencyHistogram
from autoscaler.core.slo import length_dependent, ttft_budget
from autoscaler.core.stages.feasibility import feasibility, infeasible, infeasible_threshold_tokens
from autoscaler.core.stages.slo_feedback import prefill_bound, slo_attainment

from .helpers import policy, signals

TTFT_BOUNDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, float("inf"))
QUEUE_BOUNDS = (0.05, 0.1, 0.5, 1.0, 2.0, float("inf"))


def _hist(bounds: tuple[float, ...], counts: list[float], age: float = 5.0) -> LatencyHistogram:
    return LatencyHistogram(bounds, tuple(float(c) for c in np.cumsum(counts)), age)


# half the requests take 4-8 s to their first token: far over a 2 s SLO
SLOW_TTFT = _hist(TTFT_BOUNDS, [0, 50, 50, 0, 0, 100, 0, 0])
QUICK_QUEUE = _hist(QUEUE_BOUNDS, [200, 0, 0, 0, 0, 0])
LONG_QUEUE = _hist(QUEUE_BOUNDS, [50, 0, 0, 0, 150, 0])


def test_budget_grows_with_the_prompt_and_works_on_arrays() -> None:
    slo = policy(slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": 0.5}).slo
    assert ttft_budget(slo, 0) == 2.0
    assert ttft_budget(slo, 4000) == pytest.approx(4.0)
    assert np.allclose(ttft_budget(slo, np.array([0.0, 1000.0, 8000.0])), [2.0, 2.5, 6.0])
    assert length_dependent(slo)
    flat = policy(slo={"ttftSeconds": 2.0}).slo
    assert ttft_budget(flat, 100_000) == 2.0 and not length_dependent(flat)
    queue_only = policy(slo={"ttftSeconds": None, "queueTimeSeconds": 1.0}).slo
    assert ttft_budget(queue_only, 10) == float("inf")


def test_slope_is_validated_with_the_field_named() -> None:
    with pytest.raises(ValidationError, match="ttftSecondsPerKiloPromptTokens"):
        policy(slo={"ttftSeconds": None, "queueTimeSeconds": 1.0, "ttftSecondsPerKiloPromptTokens": 0.5})
    with pytest.raises(ValidationError, match="ttftSecondsPerKiloPromptTokens"):
        policy(slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": 61})
    with pytest.raises(ValidationError, match="ttftSecondsPerKiloPromptTokens"):
        policy(slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": -1})


def test_ttft_misses_without_a_queue_are_prefill_bound() -> None:
    pol = policy()
    idle = replace(signals(work=2.0, desired=4), ttft_histogram=SLOW_TTFT, queue_time_histogram=QUICK_QUEUE)
    assert prefill_bound(pol, idle, 60.0)
    assert slo_attainment(pol, idle, 60.0) is None  # nothing capacity could fix: nothing to judge
    queued = replace(idle, waiting=Measured(5.0, 5.0))
    assert not prefill_bound(pol, queued, 60.0)
    assert slo_attainment(pol, queued, 60.0) == pytest.approx(0.5)
    slow_queue = replace(idle, queue_time_histogram=LONG_QUEUE)
    assert not prefill_bound(pol, slow_queue, 60.0)  # requests queued past the budget: capacity-bound
    unknown_queue = replace(idle, queue_time_histogram=None)
    assert not prefill_bound(pol, unknown_queue, 60.0)  # cannot tell: the misses count
    p90_only = replace(unknown_queue, queue_time_p90_seconds=Measured(0.05, 5.0))
    assert prefill_bound(pol, p90_only, 60.0)
    stale_waiting = replace(idle, waiting=Measured(0.0, 600.0))
    assert not prefill_bound(pol, stale_waiting, 60.0)


def test_length_dependent_slo_judges_the_histogram_at_the_mean_prompts_budget() -> None:
    # mean prompt 8,000 tokens: budget 2 + 0.75 × 8 = 8 s, which every request met
    pol = policy(slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": 0.75})
    sig = replace(signals(work=2.0, desired=4, waiting=3.0, request_rate=2.5), ttft_histogram=SLOW_TTFT)
    assert slo_attainment(pol, sig, 60.0) == pytest.approx(1.0)
    assert slo_attainment(policy(), sig, 60.0) == pytest.approx(0.5)


def _ticks(pol, sig: Signals, n: int = 40) -> tuple[list[int | None], CoreState]:
    state, out = CoreState(), []
    for i in range(n):
        res = decide(pol, sig, state, 1000.0 + 15.0 * i)
        state = res.state
        out.append(res.decision.desired_replicas)
    return out, state


def test_prefill_bound_misses_neither_tighten_the_load_factor_nor_panic() -> None:
    pol = policy(capacity={"targetUtilization": 0.8, "sloFeedback": {"max": 3.0}})
    base = signals(work=2.0, desired=4, queue_p90=0.05)
    slow = replace(base, ttft_histogram=SLOW_TTFT, queue_time_histogram=QUICK_QUEUE,
                   ttft_p90_seconds=Measured(7.0, 5.0))
    with_misses, state = _ticks(pol, slow)
    without, _ = _ticks(pol, replace(base, queue_time_histogram=QUICK_QUEUE))
    assert with_misses == without
    assert state.load_factor <= 1.0 and state.panic_until is None
    # the same misses with queue time over budget are capacity-bound: the factor rises
    _, queued = _ticks(pol, replace(slow, queue_time_histogram=LONG_QUEUE))
    assert queued.load_factor > 1.0


counts = st.lists(st.floats(0, 1e4, allow_nan=False), min_size=len(TTFT_BOUNDS), max_size=len(TTFT_BOUNDS))


@settings(max_examples=60, deadline=None)
@given(ttft=counts, p90=st.floats(0.01, 1e3), work=st.floats(0.1, 30), desired=st.integers(1, 40),
       waiting=st.floats(0, 0.99))
def test_misses_while_nothing_queues_never_add_replicas(ttft: list[float], p90: float, work: float, desired: int,
                                                        waiting: float) -> None:
    pol = policy(capacity={"targetUtilization": 0.8})
    base = replace(signals(work=work, desired=desired, waiting=waiting, queue_p90=0.05),
                   queue_time_histogram=QUICK_QUEUE)
    slow = replace(base, ttft_histogram=_hist(TTFT_BOUNDS, ttft), ttft_p90_seconds=Measured(p90, 5.0))
    a, sa = _ticks(pol, slow, 12)
    b, sb = _ticks(pol, base, 12)
    assert a == b and sa.load_factor == sb.load_factor


# prompt lengths as vLLM buckets them (1, 2, 5, 10, ... 10,000, 20,000, 50,000, +Inf)
PROMPT_BOUNDS = (1000.0, 2000.0, 5000.0, 10000.0, 20000.0, 50000.0, float("inf"))


def test_infeasible_share_from_the_prompt_histogram() -> None:
    # 10k tokens/s prefill (helpers' policy), 2 s SLO: prompts over 20,000 tokens cannot make it
    pol = policy(slo={"ttftSeconds": 2.0})
    assert infeasible_threshold_tokens(pol) == pytest.approx(20_000)
    hist = _hist(PROMPT_BOUNDS, [100, 300, 400, 100, 60, 40, 0])
    sig = replace(signals(work=2.0, desired=4), prompt_tokens_histogram=hist)
    share, why = feasibility(pol, sig)
    assert share == pytest.approx(0.04) and "20,000 tokens" in why
    assert infeasible(pol, share)
    d = decide(pol, sig, CoreState(), 1000.0).decision
    assert d.slo_infeasible_share == pytest.approx(0.04)
    # a slope covering the prefill time per token makes every length feasible
    generous = policy(slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": 0.1})
    assert feasibility(generous, sig)[0] == 0.0
    # halfway: 2 + 0.05 s per 1k, prefill 0.1 s per 1k: over 40,000 tokens infeasible
    half = policy(slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": 0.05})
    assert infeasible_threshold_tokens(half) == pytest.approx(40_000)
    assert feasibility(half, sig)[0] == pytest.approx(40 * (50 - 40) / 30 / 1000)
    # 1.3% over a 1% error budget: infeasible at q0.99, feasible at q0.95
    assert infeasible(half, feasibility(half, sig)[0])
    loose = policy(slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": 0.05, "quantile": 0.95})
    assert not infeasible(loose, feasibility(loose, sig)[0])


def test_infeasible_share_unknown_without_a_fresh_histogram() -> None:
    pol = policy()
    hist = _hist(PROMPT_BOUNDS, [100, 300, 400, 100, 60, 40, 0])
    assert feasibility(pol, signals(work=2.0, desired=4))[0] is None
    stale = replace(signals(work=2.0, desired=4), prompt_tokens_histogram=replace(hist, age_seconds=600.0))
    assert feasibility(pol, stale)[0] is None
    few = replace(signals(work=2.0, desired=4), prompt_tokens_histogram=_hist(PROMPT_BOUNDS, [1, 0, 0, 0, 0, 0, 1]))
    assert feasibility(pol, few)[0] is None
    queue_only = policy(slo={"ttftSeconds": None, "queueTimeSeconds": 1.0})
    assert feasibility(queue_only, replace(signals(work=2.0, desired=4), prompt_tokens_histogram=hist))[0] is None
