"""Judging one stage against the policy's SLO."""

from __future__ import annotations

import pytest

from autoscaler.policy import SLOSpec
from autoscaler.profile.client import Result
from autoscaler.profile.stages import SLO, idle_ttft, summarise


def ok(ttft: float, prompt: int = 100, out: int = 10) -> Result:
    return Result(0.0, True, None, ttft, ttft + 1.0, 0.1, prompt, out, True)


def test_attainment_counts_failures_and_drops_as_misses() -> None:
    slo = SLO(ttft_seconds=2.0, quantile=0.75)
    results = [ok(0.5), ok(1.9), ok(2.1), Result(0.0, False, "HTTP 503: busy")]
    s = summarise(3.0, results, dropped=1, in_flight_seen=[1, 3], slo=slo, idle=0.0)
    assert s.requests == 5 and s.completed == 3
    assert s.attainment == pytest.approx(2 / 5) and not s.holds
    assert s.errors == {"HTTP 503: busy": 1, "dropped: the client's in-flight bound was reached": 1}
    assert s.mean_in_flight == 2.0 and s.mean_prompt_tokens == 100 and s.mean_output_tokens == 10


def test_a_stage_holds_at_the_quantile() -> None:
    results = [ok(0.1)] * 99 + [ok(5.0)]
    assert summarise(1.0, results, 0, [], SLO(2.0, None, 0.99), 0.0).holds
    assert not summarise(1.0, results, 1, [], SLO(2.0, None, 0.99), 0.0).holds


def test_queue_time_is_ttft_beyond_the_idle_replicas() -> None:
    slo = SLO(ttft_seconds=None, queue_time_seconds=0.5, quantile=0.5)
    idle = idle_ttft([ok(1.0), ok(1.2), ok(0.8)])
    assert idle == pytest.approx(1.0)
    assert slo.met(ok(1.4), idle) and not slo.met(ok(1.6), idle)


def test_the_slo_comes_from_the_policy() -> None:
    slo = SLO.of_policy(SLOSpec(ttft_seconds=3.0, queue_time_seconds=1.0, quantile=0.95))
    assert (slo.ttft_seconds, slo.queue_time_seconds, slo.quantile) == (3.0, 1.0, 0.95)
    assert slo.describe() == "TTFT ≤ 3 s and queue time ≤ 1 s for 0.95 of requests"


def test_an_empty_stage_does_not_hold() -> None:
    s = summarise(1.0, [], 0, [], SLO(), 0.0)
    assert not s.holds and s.ttft_p50 is None


def test_the_deadline_is_the_tighter_objective() -> None:
    both = SLO(ttft_seconds=2.0, queue_time_seconds=0.5, quantile=0.9)
    assert both.deadline(1.0) == 1.5 and both.deadline(3.0) == 2.0
    assert SLO(ttft_seconds=2.0).deadline(10.0) == 2.0


def test_a_stage_stopped_early_never_holds() -> None:
    s = summarise(1.0, [ok(0.1)] * 10, 0, [], SLO(2.0, None, 0.5), 0.0, broke_early=True)
    assert s.attainment == 1.0 and not s.holds
