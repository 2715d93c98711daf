"""The SLOInfeasible condition and its events, against the fake API server."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from autoscaler.core.signals import LatencyHistogram, Signals
from autoscaler.policy import ModelScalingPolicy
from tests.unit.controller.conftest import (
    CountingSource,
    add_deployment,
    add_gpu_node,
    add_policy,
    condition,
    make_controller,
    status_of,
)
from tests.unit.controller.fakeapi import FakeKube

BOUNDS = (1000.0, 2000.0, 5000.0, 10000.0, 20000.0, 50000.0, float("inf"))
# 10% of the prompts are 20k-50k tokens: at the default 15,000 tokens/s, prefill alone takes over 2 s for
# any prompt over 30,000 tokens (a 2 s SLO): (50k - 30k) / 30k of that bucket, ~6.7% of all requests
LONG = LatencyHistogram(BOUNDS, (300.0, 600.0, 800.0, 900.0, 900.0, 1000.0, 1000.0), 2.0)
SHORT = LatencyHistogram(BOUNDS, (300.0, 600.0, 800.0, 1000.0, 1000.0, 1000.0, 1000.0), 2.0)


class PromptSource(CountingSource):
    def __init__(self) -> None:
        super().__init__()
        self.prompts: LatencyHistogram | None = LONG

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        return {k: replace(s, prompt_tokens_histogram=self.prompts)
                for k, s in super().collect(policies, now).items()}


def reasons(kube: FakeKube) -> list[tuple[str, str, int]]:
    return [(e["type"], e["reason"], e["count"]) for e in kube.items("", "events") if "SLO" in e["reason"]]


def test_condition_tracks_the_infeasible_share_and_events_mark_transitions(kube, api) -> None:
    add_gpu_node(kube)
    add_deployment(kube, replicas=2)
    add_policy(kube)
    src, now = PromptSource(), [1_800_000_000.0]
    c = make_controller(api, src, clock=lambda: now[0])
    c.run_once()
    cond = condition(status_of(kube), "SLOInfeasible")
    assert cond["status"] == "True" and cond["reason"] == "PrefillExceedsBudget"
    assert "6.7% of recent requests" in cond["message"] and "30,000 tokens" in cond["message"]
    assert reasons(kube) == [("Warning", "SLOInfeasible", 1)]
    now[0] += 15
    c.run_once()
    assert reasons(kube) == [("Warning", "SLOInfeasible", 1)]  # no transition: no event, not even a repeat
    src.prompts = SHORT
    now[0] += 15
    c.run_once()
    cond = condition(status_of(kube), "SLOInfeasible")
    assert cond["status"] == "False" and cond["reason"] == "Feasible"
    assert reasons(kube) == [("Warning", "SLOInfeasible", 1), ("Normal", "SLOFeasible", 1)]


def test_without_a_prompt_histogram_the_condition_is_unknown_and_quiet(kube, api) -> None:
    add_gpu_node(kube)
    add_deployment(kube, replicas=2)
    add_policy(kube)
    src = PromptSource()
    src.prompts = None
    make_controller(api, src).run_once()
    cond = condition(status_of(kube), "SLOInfeasible")
    assert cond["status"] == "Unknown" and "vllm:request_prompt_tokens" in cond["message"]
    assert reasons(kube) == []


def test_a_slope_covering_prefill_makes_long_prompts_feasible(kube, api) -> None:
    add_gpu_node(kube)
    add_deployment(kube, replicas=2)
    add_policy(kube, slo={"ttftSeconds": 2.0, "ttftSecondsPerKiloPromptTokens": 0.1})
    make_controller(api, PromptSource()).run_once()
    cond = condition(status_of(kube), "SLOInfeasible")
    assert cond["status"] == "False"
    assert reasons(kube) == []


def test_the_event_follows_the_conditions_transition() -> None:
    from autoscaler.controller.status import slo_infeasible_event

    def cond(status: str) -> dict[str, str]:
        return {"type": "SLOInfeasible", "status": status, "message": f"m-{status}"}

    assert slo_infeasible_event(None, cond("True")) == ("Warning", "SLOInfeasible", "m-True")
    assert slo_infeasible_event(cond("Unknown"), cond("True")) == ("Warning", "SLOInfeasible", "m-True")
    assert slo_infeasible_event(cond("True"), cond("False")) == ("Normal", "SLOFeasible", "m-False")
    assert slo_infeasible_event(cond("True"), cond("True")) is None
    assert slo_infeasible_event(None, cond("False")) is None
    assert slo_infeasible_event(cond("True"), cond("Unknown")) is None
    assert slo_infeasible_event(cond("False"), None) is None
