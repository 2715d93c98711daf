"""Replays end to end: the metrics view's lags, the oracle, ours through the decision core."""

from __future__ import annotations

import numpy as np
import pytest

from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.oracle import run_oracle
from simulations.autoscalers.ours import Ours
from simulations.autoscalers.static import Static
from simulations.fleet import RequestFleet
from simulations.metrics_view import MetricsView
from simulations.profiles import COLD_START_PROFILES
from simulations.runner import run
from simulations.scenario import Scenario, TraceSpec, bundled_path

from .conftest import poisson_trace


def _scenario() -> Scenario:
    return Scenario(name="t", trace=TraceSpec(format="flash-crowd"), initial_replicas=2, cold_start="typical")


def test_metrics_view_reports_rates_and_gauges_as_of_the_last_scrape(serving) -> None:
    trace = poisson_trace(10, 300, prompt=1000, output=100, vary=False)
    fleet = RequestFleet(trace, serving, COLD_START_PROFILES["warm"], initial_replicas=2)
    view = MetricsView(15.0, 60.0)
    for t in range(0, 241, 15):
        view.record(fleet.scrape(float(t)))
    s = view.signals(250.0)
    assert s.prompt_tokens_rate.age_seconds == pytest.approx(10.0)
    assert s.prompt_tokens_rate.value == pytest.approx(10 * 1000, rel=0.15)
    assert s.running.value is not None and s.waiting.value == 0
    assert view.signals(5.0).prompt_tokens_rate.value is None  # one scrape: no rate yet, never a zero


def test_oracle_reaches_the_target_on_a_small_trace() -> None:
    sc = _scenario()
    trace = poisson_trace(30, 900, seed=2)
    burst = poisson_trace(120, 120, seed=3)
    t = np.concatenate([trace.arrival_s, burst.arrival_s + 400])
    order = np.argsort(t, kind="stable")
    from simulations.trace import Trace

    wl = Trace("mix", t[order], np.concatenate([trace.prompt_tokens, burst.prompt_tokens])[order],
               np.concatenate([trace.output_tokens, burst.output_tokens])[order], 1704067200.0)
    res = run_oracle(sc, wl, sc.slo.target_attainment)
    assert res.outcome.attainment >= sc.slo.target_attainment
    static = run(sc, wl, Static(int(res.series_desired.max())))
    assert res.outcome.gpu_hours < static.outcome.gpu_hours  # foresight is cheaper than peak provisioning


def test_ours_runs_the_decision_core_and_scales_up_for_a_burst() -> None:
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    sc = _scenario()
    base = poisson_trace(10, 1500, seed=4)
    burst = poisson_trace(60, 600, seed=5)
    t = np.concatenate([base.arrival_s, burst.arrival_s + 600])
    order = np.argsort(t, kind="stable")
    from simulations.trace import Trace

    wl = Trace("b", t[order], np.concatenate([base.prompt_tokens, burst.prompt_tokens])[order],
               np.concatenate([base.output_tokens, burst.output_tokens])[order], 1704067200.0)
    ours = Ours(policy)
    res = run(sc, wl, ours)
    assert res.series_desired.max() > 2
    assert ours.last_decision is not None  # decided by autoscaler.core.decide
    assert res.outcome.attainment > 0.5
