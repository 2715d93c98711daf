"""Scale from zero in the simulator: the gateway's count reaches the decision, the model rests through a
gap in its traffic and wakes for the first request after it, sized by what the gateway counted."""

from __future__ import annotations

import numpy as np
import pytest

from autoscaler.policy import revised
from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.ours import Ours
from simulations.fleet import RequestFleet
from simulations.metrics_view import MetricsView
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.runner import RunResult, run
from simulations.scenario import Scenario, TraceSpec, bundled_path
from simulations.trace import Trace

from .conftest import poisson_trace

GAP = 3600.0


def _gap_trace(rate_after: float) -> Trace:
    """20 minutes at 2 requests/s, an hour of nothing, then 20 minutes at `rate_after`."""
    a, b = poisson_trace(2, 1200, seed=1), poisson_trace(rate_after, 1200, seed=2)
    t = np.concatenate([a.arrival_s, b.arrival_s + 1200 + GAP])
    return Trace("gap", t, np.concatenate([a.prompt_tokens, b.prompt_tokens]),
                 np.concatenate([a.output_tokens, b.output_tokens]), 1704067200.0)


def _run(trace: Trace, zero: bool) -> tuple[RunResult, list[tuple[float, int | None, str]]]:
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    if zero:
        policy = revised(policy, replicas={"min": 0},
                         scale_from_zero={"query": "sum(gateway_in_flight)", "idle_seconds": 900})
    log: list[tuple[float, int | None, str]] = []
    sc = Scenario(name="gap", trace=TraceSpec(format="flash-crowd"), initial_replicas=1, cold_start="typical")
    res = run(sc, trace, Ours(policy, on_decision=lambda now, d: log.append(
        (now, d.desired_replicas, d.reason.value))))
    return res, log


def test_the_metrics_view_reports_the_gateways_count_as_of_the_last_scrape(serving: ServingProfile) -> None:
    trace = poisson_trace(5, 120, seed=3)
    fleet = RequestFleet(trace, serving, COLD_START_PROFILES["typical"], initial_replicas=0)
    view = MetricsView(15.0, 60.0)
    for t in range(0, 61, 15):
        view.record(fleet.scrape(float(t)))
    s = view.signals(70.0)
    assert s.front_door.value == fleet.in_flight > 0  # no replica: every arrival waits at the gateway
    assert s.front_door.age_seconds == pytest.approx(10.0)


def test_the_model_rests_through_the_gap_and_wakes_for_the_first_request() -> None:
    trace = _gap_trace(2.0)
    res, log = _run(trace, zero=True)
    base, _ = _run(trace, zero=False)
    last_before = float(trace.arrival_s[trace.arrival_s < 1200].max())
    first_after = float(trace.arrival_s[trace.arrival_s > 1200].min())
    down = next(t for t, d, r in log if d == 0)
    up = next(t for t, d, r in log if t > down and d and d > 0)
    # idle: the engines' rate window empties about a minute after the last request, then idleSeconds
    assert last_before + 900 < down < last_before + 900 + 120
    assert first_after < up <= first_after + 15 + 15  # one scrape and one tick
    assert [r for t, d, r in log if t in (down, up)] == ["ScaleDownToZero", "ScaleUpFromZero"]
    # the wake takes what 2 requests/s need, not a burst's worth for the backlog it held
    assert res.series_desired[res.series_t > up].max() <= 2
    assert res.outcome.gpu_hours < base.outcome.gpu_hours - 0.5  # most of the hour is not paid for
    assert res.outcome.aborted == 0


def _ordered_in_cold_start(rate_after: float) -> int:
    trace = _gap_trace(rate_after)
    _, log = _run(trace, zero=True)
    first_after = float(trace.arrival_s[trace.arrival_s > 1200].min())
    return max(d for t, d, r in log if first_after < t <= first_after + 120 and d is not None)


def test_a_wake_into_heavy_traffic_orders_its_replicas_during_the_cold_start() -> None:
    """After the gap 30 requests/s arrive instead of 2: the gateway's count while the first replica starts
    says so, and more replicas are ordered within two minutes, long before the first one is ready."""
    light, heavy = _ordered_in_cold_start(2.0), _ordered_in_cold_start(30.0)
    assert light == 1 and heavy >= 3, (light, heavy)


def test_after_a_wake_into_heavy_traffic_the_arrivals_are_served_while_the_backlog_drains() -> None:
    """At 30 requests/s the first replica takes the gateway's whole backlog (a cold start of arrivals) and
    serves nothing else for minutes; the wake's other replicas must carry the arrivals. Sized for the
    arrivals alone they ran at the edge of their capacity, queued, and the arrivals missed for as long as
    the backlog lasted (9,732 misses among those arriving 400 s or more after the gap)."""
    trace = _gap_trace(30.0)
    res, _ = _run(trace, zero=True)
    first_after = float(trace.arrival_s[trace.arrival_s > 1200].min())
    assert res.missed_arrivals is not None
    later = trace.arrival_s >= first_after + 400
    missed_later = int(np.sum(res.missed_arrivals >= first_after + 400))
    assert missed_later <= 0.01 * int(np.sum(later)), missed_later
