"""The burst stage (autoscaler/core/stages/burst.py) and its hold on their own, and held by the decision."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState, decide
from autoscaler.core.signals import LatencyHistogram, ReplicaCounts, StartingReplica
from autoscaler.core.stages.burst import BURST_LOAD_SHARE, MAX_STEP, burst, hold, wait_at
from autoscaler.core.stages.capacity import STEADY_SECONDS

from .helpers import policy, signals

BOUNDS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, math.inf)


def hist(counts: list[float] | list[int], age: float = 5.0) -> LatencyHistogram:
    """A vLLM-bucketed queue-time histogram from per-bucket counts (padded with zeros)."""
    per = [float(c) for c in counts] + [0.0] * (len(BOUNDS) - len(counts))
    cumulative, total = [], 0.0
    for c in per:
        total += c
        cumulative.append(total)
    return LatencyHistogram(BOUNDS, tuple(cumulative), age_seconds=age)


# 1,000 requests: 980 within 0.3 s, 20 between 2.5 and 5 s: the 99th percentile waits 2.5-5 s.
BURSTY = hist([980, 0, 0, 0, 0, 0, 0, 20])
POL = policy()  # TTFT SLO 2 s: queue budget 1 s; SLO quantile 0.99
NOW = 1000.0


def test_the_wait_is_the_queue_time_at_the_slo_quantile() -> None:
    w = wait_at(BURSTY, 0.99)
    assert w is not None and 2.5 <= w <= 5.0
    assert BURSTY.share_within(w) >= 0.99 > BURSTY.share_within(w * 0.999)  # type: ignore[operator]
    assert wait_at(hist([]), 0.99) is None
    assert wait_at(hist([0] * 16 + [10]), 0.99) == 4000.0  # past every finite bound


def test_the_wait_is_never_a_rounding_error_under_the_share_it_inverts() -> None:
    # Here the closed-form quantile lands one ulp under the share asked for (found by a random search).
    h = hist([0, 2, 731, 5, 2, 50, 500, 0, 0, 500, 0, 0, 0, 0, 2, 2, 25])
    q = 0.7264750033807256
    exact = h.quantile(q)
    assert exact is not None and (h.share_within(exact) or 0.0) < q
    w = wait_at(h, q)
    assert w is not None and (h.share_within(w) or 0.0) >= q and w == pytest.approx(exact, rel=1e-10)


def test_a_fleet_under_half_its_plan_that_queued_past_the_budget_gets_replicas_for_the_wait() -> None:
    b = burst(POL, BURSTY, True, ready=10, served=2.0, usable=1.0, steady_since=0.0, now=NOW)
    assert b.wait_seconds is not None and b.replicas == math.ceil(10 * min(MAX_STEP, b.wait_seconds / 1.0))
    assert 25 <= b.replicas <= 40
    assert b.explain()["burst"] == b.replicas


def test_one_window_asks_at_most_max_step_times_the_ready_replicas() -> None:
    long_wait = hist([980, 0, 0, 0, 0, 0, 0, 0, 0, 20])  # 99th percentile 10-15 s
    assert burst(POL, long_wait, True, 10, 2.0, 1.0, 0.0, NOW).replicas == int(10 * MAX_STEP)


def test_no_burst_replicas_when_the_queue_is_the_load_s_not_a_burst_s() -> None:
    over = BURST_LOAD_SHARE * 1.0 * 10 + 0.1  # served work over half the plan across 10 replicas
    assert burst(POL, BURSTY, True, 10, over, 1.0, 0.0, NOW).replicas == 0


def test_no_burst_replicas_from_a_window_that_may_hold_requests_from_before_the_fleet_settled() -> None:
    w = wait_at(BURSTY, 0.99)
    assert w is not None
    just_short = NOW - (STEADY_SECONDS + w) + 1.0
    assert burst(POL, BURSTY, True, 10, 2.0, 1.0, just_short, NOW).replicas == 0
    assert burst(POL, BURSTY, True, 10, 2.0, 1.0, None, NOW).replicas == 0
    assert burst(POL, BURSTY, True, 10, 2.0, 1.0, just_short - 2.0, NOW).replicas > 0


def test_no_burst_replicas_on_untrusted_sparse_or_calm_windows() -> None:
    assert burst(POL, BURSTY, False, 10, 2.0, 1.0, 0.0, NOW).replicas == 0  # a signal could not be trusted
    stale = hist([980, 0, 0, 0, 0, 0, 0, 20], age=POL.metrics.staleness_seconds + 1)
    assert burst(POL, stale, True, 10, 2.0, 1.0, 0.0, NOW).replicas == 0
    assert burst(POL, hist([0, 0, 0, 0, 0, 0, 0, 5]), True, 10, 2.0, 1.0, 0.0, NOW).replicas == 0  # < minRequests
    assert burst(POL, None, True, 10, 2.0, 1.0, 0.0, NOW).replicas == 0
    assert burst(POL, BURSTY, True, 0, 0.0, 1.0, 0.0, NOW).replicas == 0
    calm = burst(POL, hist([995, 0, 0, 0, 5]), True, 10, 2.0, 1.0, 0.0, NOW)  # 99th percentile within 1 s
    assert calm.replicas == 0 and calm.wait_seconds is not None and calm.wait_seconds <= 1.0


@settings(max_examples=200, deadline=None)
@given(counts=st.lists(st.integers(0, 500), min_size=1, max_size=len(BOUNDS)), ready=st.integers(1, 200),
       quantile=st.floats(0.5, 0.999))
def test_burst_replicas_are_bounded_and_the_wait_inverts_the_share(counts: list[int], ready: int,
                                                                   quantile: float) -> None:
    h = hist(counts)
    w = wait_at(h, quantile)
    if h.total <= 0:
        assert w is None
        return
    assert w is not None and 1e-3 <= w <= 4000.0
    share = h.share_within(w)
    assert w == 4000.0 or (share is not None and share >= quantile)
    pol = policy(slo={"quantile": quantile}, capacity={"sloFeedback": {"minRequests": 1}})
    b = burst(pol, h, True, ready, 0.0, 1.0, 0.0, 1e6)
    assert 0 <= b.replicas <= math.ceil(ready * MAX_STEP)
    assert (b.replicas > 0) == (w > pol.slo.queue_budget_seconds)


def _fleet(ready: int, starting: int = 0, unschedulable: int = 0) -> ReplicaCounts:
    up = tuple(StartingReplica("weight_load", age_seconds=60.0) for _ in range(starting))
    stuck = tuple(StartingReplica("node_provisioning", age_seconds=60.0, unschedulable=True)
                  for _ in range(unschedulable))
    return ReplicaCounts(desired=ready + starting + unschedulable, ready=ready, starting=up + stuck)


def test_the_hold_keeps_the_replicas_ordered_for_one_cold_start_then_lets_them_go() -> None:
    h = hold((), 0.0, 30, _fleet(30), 240.0)
    assert h.replicas == 30 and h.explain() == {"burst_held": 30}
    assert hold(h.history, 239.0, 0, _fleet(30), 240.0).replicas == 30
    gone = hold(h.history, 241.0, 0, _fleet(30), 240.0)
    assert gone.replicas == 0 and gone.history == () and gone.explain() == {}


def test_a_larger_order_raises_the_hold_and_a_smaller_one_does_not_lower_it() -> None:
    h = hold((), 0.0, 20, _fleet(20), 240.0)
    h = hold(h.history, 60.0, 12, _fleet(20), 240.0)
    assert h.replicas == 20
    assert hold(h.history, 250.0, 0, _fleet(20), 240.0).replicas == 12  # the first order ran out, not the second
    h = hold(h.history, 90.0, 35, _fleet(20), 240.0)
    assert h.replicas == 35 and len(h.history) == 1  # nothing below a later, higher order is kept


def test_the_hold_counts_from_when_the_replicas_are_up() -> None:
    h = hold((), 0.0, 30, _fleet(10, starting=20), 240.0)
    for t in (60.0, 120.0, 180.0, 230.0):  # still starting: the order is renewed
        h = hold(h.history, t, 0, _fleet(10 + int(t / 12), starting=20 - int(t / 12)), 240.0)
        assert h.replicas == 30
    h = hold(h.history, 240.0, 0, _fleet(30), 240.0)  # all up
    assert hold(h.history, 230.0 + 239.0, 0, _fleet(30), 240.0).replicas == 30
    assert hold(h.history, 230.0 + 241.0, 0, _fleet(30), 240.0).replicas == 0


def test_replicas_stuck_unschedulable_do_not_renew_the_hold() -> None:
    h = hold((), 0.0, 30, _fleet(10, unschedulable=20), 240.0)
    for t in (60.0, 120.0, 180.0, 239.0):
        h = hold(h.history, t, 0, _fleet(10, unschedulable=20), 240.0)
    assert h.replicas == 30
    assert hold(h.history, 241.0, 0, _fleet(10, unschedulable=20), 240.0).replicas == 0


@settings(max_examples=200, deadline=None)
@given(orders=st.lists(st.tuples(st.floats(0.0, 600.0), st.integers(0, 200), st.integers(0, 200),
                                 st.integers(0, 20)), max_size=40),
       seconds=st.floats(1.0, 1800.0))
def test_the_hold_is_the_most_ordered_within_it_and_stays_short(orders: list[tuple[float, int, int, int]],
                                                                 seconds: float) -> None:
    history: tuple[tuple[float, int], ...] = ()
    t = 0.0
    for step, ordered, ready, starting in orders:
        before = max((r for at, r in history if at >= t + step - seconds), default=0)
        t += step
        h = hold(history, t, ordered, _fleet(ready, starting), seconds)
        assert h.replicas == max(before, ordered)
        assert all(at <= t for at, _ in h.history) and [at for at, _ in h.history] == sorted(at for at, _ in h.history)
        values = [r for _, r in h.history]
        assert values == sorted(values, reverse=True) and len(set(values)) == len(values)
        history = h.history


def test_the_decision_holds_burst_replicas_for_one_cold_start_after_they_are_up() -> None:
    pol = policy(capacity={"learn": True}, replicas={"max": 100})
    state, t = CoreState(), 0.0
    calm = replace(signals(work=1.0, desired=10, request_rate=100.0), queue_time_histogram=hist([1000]))
    for _ in range(12):  # three minutes steady and calm
        r = decide(pol, calm, state, t)
        state, t = r.state, t + 15.0
    assert r.decision.desired_replicas is not None and r.decision.desired_replicas <= 10
    bursty = replace(calm, queue_time_histogram=BURSTY)
    r = decide(pol, bursty, state, t)
    assert r.decision.components["burst"] >= 25 and r.decision.desired_replicas is not None
    up, lead = int(r.decision.components["burst"]), r.decision.lead_time_seconds  # the step may be rate-limited
    assert r.decision.desired_replicas > 10 and lead > 60.0
    state, t = r.state, t + 15.0
    starting = replace(calm, replicas=_fleet(10, starting=up - 10))
    for _ in range(int(lead // 15) + 2):  # a cold start later they are still starting: still wanted
        r = decide(pol, starting, state, t)
        state, t = r.state, t + 15.0
        assert r.decision.desired_replicas == up and r.decision.binding == "burst"
    grown = replace(calm, replicas=ReplicaCounts(desired=up, ready=up))
    ready_at = t
    while t < ready_at + lead - 15.0:  # up, idle, and held for one cold start
        r = decide(pol, grown, state, t)
        state, t = r.state, t + 15.0
        assert r.decision.desired_replicas == up and r.decision.components["burst_held"] == up
    for _ in range(4):
        r = decide(pol, grown, state, t)
        state, t = r.state, t + 15.0
    assert r.decision.desired_replicas is not None and r.decision.desired_replicas < up
    assert "burst_held" not in r.decision.components


def test_the_hold_survives_a_restart_through_the_stored_state() -> None:
    h = hold((), 100.0, 30, _fleet(30), 240.0)
    stored = json.loads(json.dumps(replace(CoreState(), burst_held=h.history).to_dict()))
    back = CoreState.from_dict(stored)
    assert back.burst_held == h.history
    assert hold(back.burst_held, 300.0, 0, _fleet(30), 240.0).replicas == 30
