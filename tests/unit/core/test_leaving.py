"""Leaving replicas (on cordoned or tainted nodes): the surge stage alone, inside decide, and its properties."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState, Reason, ReplicaCounts, Signals, decide
from autoscaler.core.stages.leaving import surge

from .helpers import policy, signals
from .test_decide_properties import POL, any_signals


def _leaving(sig: Signals, n: int) -> Signals:
    assert sig.replicas is not None
    return replace(sig, replicas=replace(sig.replicas, leaving=n))


def test_surge_adds_the_leaving_replicas_to_what_the_fleet_needs() -> None:
    s = surge(desired=5, recommended=5, leaving=2, top=20)
    assert (s.replicas, s.need, s.added) == (7, 5, 2)
    assert s.explain() == {"leaving": 2, "leaving_need": 5, "leaving_surge": 2}
    assert "surge +2 for 2 replica(s)" in s.message(20)


def test_surge_is_capped_at_max_and_says_so() -> None:
    s = surge(desired=9, recommended=9, leaving=3, top=10)
    assert s.replicas == 10 and s.added == 1
    assert "capped at replicas.max" in s.message(10)


def test_a_count_held_above_the_need_already_covers_leaving_replicas() -> None:
    # Stabilization holds 8 while 5 are needed: 2 leaving leave 6 >= 5 on nodes that stay.
    s = surge(desired=8, recommended=5, leaving=2, top=20)
    assert s.replicas == 8 and s.added == 0
    assert "covered without a surge" in s.message(20)


def test_a_rate_limited_count_gets_its_replacements_on_top() -> None:
    s = surge(desired=6, recommended=12, leaving=2, top=20)
    assert s.replicas == 8 and s.need == 6


def test_no_surge_without_leaving_replicas_or_while_replicas_are_stuck_unschedulable() -> None:
    assert surge(5, 5, 0, 20) == surge(5, 5, -3, 20)
    assert surge(5, 5, 0, 20).added == 0 and surge(5, 5, 0, 20).explain() == {}
    assert surge(5, 5, 2, 20, stuck=1).added == 0


def test_decide_surges_at_once_past_the_rate_limit() -> None:
    pol = policy(replicas={"min": 1, "max": 20}, scaleUp={"maxStepReplicas": 1, "maxStepPercent": 0.1})
    steady = signals(work=3.5, desired=4)
    base = decide(pol, steady, CoreState(), 1000.0).decision
    assert base.desired_replicas == 4 and base.reason is Reason.STEADY
    d = decide(pol, _leaving(steady, 2), CoreState(), 1000.0).decision
    assert d.desired_replicas == 6 and d.reason is Reason.SCALE_UP_LEAVING
    assert d.components["leaving"] == 2 and d.components["leaving_need"] == 4
    assert "surge +2" in d.message


def test_decide_surges_when_demand_metrics_are_missing_too() -> None:
    pol = policy(replicas={"min": 1, "max": 20})
    sig = Signals(replicas=ReplicaCounts(desired=4, ready=4, leaving=1))
    d = decide(pol, sig, CoreState(), 1000.0).decision
    assert d.desired_replicas == 5 and d.reason is Reason.SCALE_UP_LEAVING
    assert d.components["leaving_need"] == 4


def test_the_surge_is_not_remembered_as_a_recommendation() -> None:
    # Once the leaving replicas are gone, the fleet is back to its need after the stabilization window,
    # not held at the surge by it.
    pol = policy(replicas={"min": 1, "max": 20}, scaleDown={"stabilizationWindowSeconds": 60})
    r = decide(pol, _leaving(signals(work=3.5, desired=4), 2), CoreState(), 1000.0)
    assert r.decision.desired_replicas == 6
    assert max(v for _, v in r.state.recommendations) == 4


@settings(max_examples=300, deadline=None)
@given(sig=any_signals(), leaving=st.integers(0, 30), now=st.floats(0, 1e9))
def test_leaving_never_lowers_the_count_and_never_exceeds_max(sig: Signals, leaving: int, now: float) -> None:
    without = decide(POL, sig, CoreState(), now).decision
    with_ = decide(POL, _leaving(sig, leaving), CoreState(), now).decision
    assert without.desired_replicas is not None and with_.desired_replicas is not None
    assert without.desired_replicas <= with_.desired_replicas <= POL.replicas.max
    assert with_.desired_replicas - without.desired_replicas <= leaving
