"""The decision: one behaviour per test."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core import CoreState, Measured, Reason, ReplicaCounts, Signals, StartingReplica, decide
from autoscaler.core.signals import LatencyHistogram

from .helpers import policy, signals


def run(pol, sig, state=None, now=1000.0):
    return decide(pol, sig, state or CoreState(), now)


def test_scales_up_to_cover_demand_at_target_utilization() -> None:
    pol = policy(capacity={"targetUtilization": 0.5})
    r = run(pol, signals(work=4.0, desired=4))
    # 4 replica-equivalents at 50% target utilization -> 8 replicas.
    assert r.decision.desired_replicas == 8
    assert r.decision.reason is Reason.SCALE_UP_REACTIVE


def test_backlog_growth_reveals_demand_hidden_by_saturation() -> None:
    pol = policy()
    state, desired = CoreState(), 4
    # Throughput stays at 4 (saturated) but the queue grows by 40 requests every 10 s: offered is higher.
    for i in range(3):
        r = run(pol, signals(work=4.0, desired=desired, waiting=40.0 * i, request_rate=40), state, now=1000.0 + 10 * i)
        state = r.state
    assert r.decision.components["offered_work"] > r.decision.components["served_work"]
    assert (r.decision.desired_replicas or 0) > 4


def test_a_single_queue_spike_is_not_extrapolated_as_demand() -> None:
    pol = policy()
    r1 = run(pol, signals(work=4.0, desired=8, waiting=0.0, request_rate=40), now=1000.0)
    r2 = run(pol, signals(work=4.0, desired=8, waiting=300.0, request_rate=40), r1.state, now=1015.0)
    assert r2.decision.components["offered_work"] == r2.decision.components["served_work"]
    # Eight replicas at capacity 1 each drain the spike before anything ordered now could be ready.
    assert r2.decision.components["projected_backlog_work"] == 0


def test_at_zero_replicas_the_hold_says_what_brings_the_first_replica_back() -> None:
    """At 0 replicas no engine reports demand; the hold must not read like an ordinary metrics outage."""
    pol = policy(replicas={"min": 0, "max": 4})
    r = run(pol, Signals(replicas=ReplicaCounts(desired=0, ready=0)))
    assert r.decision.desired_replicas == 0 and r.decision.reason is Reason.METRICS_MISSING
    assert "no engine reports demand" in r.decision.message and "floorSchedule" in r.decision.message
    r = run(pol, signals(work=0.0, desired=2, age=600.0))  # an outage at 2 replicas says nothing of zero
    assert r.decision.desired_replicas == 2 and "no engine reports demand" not in r.decision.message


def test_stale_demand_never_scales_down_and_holds() -> None:
    pol = policy()
    r = run(pol, signals(work=0.0, desired=10, age=600.0))
    assert r.decision.desired_replicas == 10
    assert r.decision.reason is Reason.METRICS_MISSING
    assert not r.decision.metrics_fresh


def test_missing_demand_with_fixed_fallback_scales_up_to_it() -> None:
    pol = policy(onMissingMetrics={"action": "fixed", "replicas": 6})
    sig = Signals(replicas=ReplicaCounts(desired=2, ready=2))
    assert run(pol, sig).decision.desired_replicas == 6


def test_missing_demand_with_floor_action_runs_the_highest_scheduled_floor() -> None:
    window = {"start": "08:00", "end": "09:00", "minReplicas": 7}
    pol = policy(replicas={"min": 1, "max": 50, "floorSchedule": [window]}, onMissingMetrics={"action": "floor"})
    sig = Signals(replicas=ReplicaCounts(desired=2, ready=2))
    assert run(pol, sig, now=0.0).decision.desired_replicas == 7  # 00:00 UTC: outside the window


def test_unknown_target_writes_nothing() -> None:
    r = run(policy(), Signals())
    assert r.decision.desired_replicas is None
    assert r.decision.reason is Reason.TARGET_UNKNOWN


def test_scale_down_waits_for_the_stabilization_window() -> None:
    pol = policy(scaleDown={"stabilizationWindowSeconds": 300, "maxStepReplicas": 100, "maxStepPercent": 100})
    state = CoreState()
    t = 0.0
    r = run(pol, signals(work=10.0, desired=10), state, now=t)
    state = r.state
    # Demand drops to 1.9 (2 replicas at the 95% planning ceiling): hold for the window, then go down.
    while t < 290:
        t += 15
        r = run(pol, signals(work=1.9, desired=10), state, now=t)
        state = r.state
        assert r.decision.desired_replicas == 10
    t = 320.0
    r = run(pol, signals(work=1.9, desired=10), state, now=t)
    assert r.decision.desired_replicas == 2  # 1.9 at the 95% planning ceiling
    assert r.decision.reason is Reason.SCALE_DOWN


def test_scale_down_is_bounded_by_step() -> None:
    pol = policy(scaleDown={"stabilizationWindowSeconds": 1, "maxStepReplicas": 2, "maxStepPercent": 10})
    first = run(pol, signals(work=1.0, desired=20), now=0.0)
    r = run(pol, signals(work=1.0, desired=20), first.state, now=10.0)
    assert r.decision.desired_replicas == 18


def test_no_scale_down_right_after_a_start_without_history() -> None:
    pol = policy(scaleDown={"stabilizationWindowSeconds": 300, "maxStepReplicas": 100, "maxStepPercent": 100})
    r = run(pol, signals(work=1.0, desired=20), now=0.0)
    assert r.decision.desired_replicas == 20
    assert r.decision.reason is Reason.STABILIZING


def test_default_window_covers_the_high_quantile_cold_start() -> None:
    from autoscaler.core.coldstart import lead_time
    from autoscaler.core.decide import stabilization_window_seconds
    from autoscaler.core.signals import ClusterFacts

    pol = policy(coldStart={"nodeProvisioningSeconds": 400})
    lead = lead_time(pol.cold_start, CoreState().coldstart, ClusterFacts())
    assert lead.high_seconds > 600
    assert stabilization_window_seconds(pol, lead) >= lead.high_seconds


def test_scale_up_is_rate_limited_outside_panic() -> None:
    pol = policy(scaleUp={"maxStepReplicas": 2, "maxStepPercent": 50})
    r = run(pol, signals(work=30.0, desired=4))
    assert r.decision.desired_replicas == 6
    assert r.decision.reason is Reason.SCALE_UP_RATE_LIMITED


def test_panic_lifts_the_rate_limit_when_slo_is_breached() -> None:
    pol = policy(scaleUp={"maxStepReplicas": 2, "maxStepPercent": 50, "panic": {"maxStepPercent": 1000}})
    r = run(pol, signals(work=30.0, desired=4, queue_p90=5.0))
    assert r.decision.panic
    assert (r.decision.desired_replicas or 0) >= 30


def test_panic_blocks_scale_down() -> None:
    pol = policy(scaleDown={"stabilizationWindowSeconds": 1})
    first = run(pol, signals(work=1.0, desired=10, queue_p90=9.0), now=90.0)
    r = run(pol, signals(work=1.0, desired=10, queue_p90=9.0), first.state, now=100.0)
    assert r.decision.desired_replicas == 10
    assert r.decision.reason is Reason.PANIC_HOLD


def test_floor_and_max_bound_the_result() -> None:
    pol = policy(replicas={"min": 3, "max": 5})
    assert run(pol, signals(work=0.0, desired=3)).decision.desired_replicas == 3
    assert run(pol, signals(work=40.0, desired=5)).decision.desired_replicas == 5


def test_time_of_day_floor_applies_inside_its_window() -> None:
    pol = policy(replicas={"min": 1, "max": 50, "floorSchedule": [
        {"days": ["thu"], "start": "08:00", "end": "18:00", "minReplicas": 9}]})
    thursday_noon = 12 * 3600.0  # 1970-01-01 was a Thursday
    friday_noon = thursday_noon + 86400
    assert run(pol, signals(work=0.0, desired=1), now=thursday_noon).decision.desired_replicas == 9
    assert run(pol, signals(work=0.0, desired=1), now=friday_noon).decision.desired_replicas == 1


def test_floor_window_crossing_midnight_belongs_to_its_start_day() -> None:
    pol = policy(replicas={"min": 1, "max": 50, "floorSchedule": [
        {"days": ["thu"], "start": "22:00", "end": "02:00", "minReplicas": 4}]})
    friday_1am = 86400 + 3600.0
    assert run(pol, signals(work=0.0, desired=1), now=friday_1am).decision.desired_replicas == 4


def test_starting_replicas_are_not_ordered_again_while_the_queue_grows() -> None:
    pol = policy()
    starting = tuple(StartingReplica("warmup", age_seconds=100.0, stage_age_seconds=10.0) for _ in range(6))
    state = CoreState()
    # 4 ready serving their max, 6 starting; demand 10, a queue building up while they start.
    wanted = []
    for i, t in enumerate((0.0, 15.0, 30.0)):
        s = signals(work=4.0, desired=10, ready=4, starting=tuple(
            replace(x, stage_age_seconds=10.0 + 15 * i) for x in starting), waiting=100.0 * (i + 1), request_rate=40)
        s = replace(s, prompt_tokens_rate=Measured(40000.0, 5.0))
        r = decide(pol, s, state, t)
        state = r.state
        wanted.append(r.decision.desired_replicas)
    assert wanted[2] is not None and wanted[1] is not None and wanted[2] <= wanted[1], wanted


def test_unschedulable_replicas_past_the_limit_are_reported_not_piled_on() -> None:
    pol = policy(coldStart={"unschedulableLimitSeconds": 60})
    stuck = (StartingReplica("node_provisioning", age_seconds=300.0, unschedulable=True),)
    r = run(pol, signals(work=20.0, desired=5, ready=4, starting=stuck))
    assert r.decision.desired_replicas == 5
    assert r.decision.reason is Reason.UNSCHEDULABLE
    assert r.decision.unschedulable_stuck == 1


def test_dead_replicas_do_not_learn_capacity_without_a_queue() -> None:
    pol = policy(capacity={"learn": True})
    state = CoreState()
    for t in range(10):
        state = run(pol, signals(work=1.0, desired=4), state, now=float(t * 15)).state
    assert state.capacity.samples == ()


def test_capacity_is_learned_while_saturated() -> None:
    pol = policy(capacity={"learn": True})
    state = CoreState()
    for t in range(30):
        # 200 waiting at 80 requests/s: 2.5 s of the fleet's service, over the 1-s queue budget.
        state = run(pol, signals(work=8.0, desired=4, waiting=200.0), state, now=float(t * 15)).state
    # 4 replicas serve 8 replica-equivalents: capacity is 2× the prior (bounded by learnMaxFactor=2).
    assert state.capacity.factor(pol.capacity) > 1.5


def test_a_queue_shorter_than_the_queue_budget_is_no_throughput_sample() -> None:
    # 50 waiting at 80 requests/s drain in 0.6 s: requests wait for the next engine step, not for capacity,
    # and served/ready is then a utilisation (here 2×), not what a replica can carry.
    pol = policy(capacity={"learn": True})
    state = CoreState()
    for t in range(30):
        state = run(pol, signals(work=8.0, desired=4, waiting=50.0), state, now=float(t * 15)).state
    assert state.capacity.samples == ()


def test_state_round_trips_through_a_dict() -> None:
    pol = policy(forecast={"enabled": True})
    state = CoreState()
    for t in range(40):
        state = run(pol, signals(work=3.0 + t % 3, desired=5, waiting=2.0), state, now=float(t * 15)).state
    import json

    again = CoreState.from_dict(json.loads(json.dumps(state.to_dict())))
    s = signals(work=4.0, desired=5)
    assert run(pol, s, again, now=700.0).decision == run(pol, s, state, now=700.0).decision


def test_decide_does_not_change_its_inputs() -> None:
    pol = policy(forecast={"enabled": True})
    state = CoreState()
    before = state.to_dict()
    run(pol, signals(work=3.0, desired=5), state)
    assert state.to_dict() == before


def test_explanation_names_the_binding_constraint() -> None:
    pol = policy(replicas={"min": 7, "max": 50})
    d = run(pol, signals(work=1.0, desired=7)).decision
    assert d.binding == "floor"
    assert d.components["floor"] == 7


def test_restored_state_keeps_the_forecast_history_in_a_small_status() -> None:
    import json
    import math

    pol = policy(forecast={"enabled": True})
    state = CoreState()
    for i in range(3 * 1440):  # three days at one tick a minute, a daily cycle between 2 and 8
        work = 5 + 3 * math.sin(i / 1440 * 2 * math.pi)
        state = run(pol, signals(work=work, desired=10), state, now=i * 60.0).state
    blob = json.dumps(state.to_dict())
    assert len(blob) < 40_000
    restored = CoreState.from_dict(json.loads(blob))
    now = 3 * 1440 * 60.0
    a = run(pol, signals(work=5.0, desired=10), state, now=now).decision
    b = run(pol, signals(work=5.0, desired=10), restored, now=now).decision
    assert a.forecast_work is not None and b.forecast_work is not None
    assert abs(a.forecast_work - b.forecast_work) <= 0.15 * a.forecast_work


def test_unreadable_forecast_history_starts_fresh_instead_of_failing() -> None:
    restored = CoreState.from_dict({"forecast": {"stepSeconds": 60, "firstTSeconds": 0, "values": "!!!"}})
    assert restored.forecast_seed is None
    assert run(policy(forecast={"enabled": True}), signals(work=1.0, desired=2), restored).decision.desired_replicas


def _ttft_histogram(share_fast: float, total: float = 1000.0) -> LatencyHistogram:
    fast = share_fast * total
    return LatencyHistogram((0.5, 1.0, 2.5, 5.0, float("inf")), (fast * 0.5, fast, fast, total, total), 5.0)


def test_slo_misses_with_every_replica_ready_raise_the_load_factor() -> None:
    pol = policy(capacity={"sloFeedback": {"max": 3.0}})  # headroom on (default off: AH)
    state = CoreState()
    for i in range(16):  # four minutes of 20% misses, fleet settled
        s = replace(signals(work=4.0, desired=8), ttft_histogram=_ttft_histogram(0.8))
        r = run(pol, s, state, now=1000.0 + 15 * i)
        state = r.state
    assert state.load_factor > 2.0
    assert (r.decision.desired_replicas or 0) > 8


def test_slo_misses_while_replicas_start_do_not_raise_the_load_factor() -> None:
    pol = policy()
    state = CoreState()
    starting = (StartingReplica("warmup", age_seconds=30.0),)
    for i in range(8):
        s = replace(signals(work=4.0, desired=9, ready=8, starting=starting), ttft_histogram=_ttft_histogram(0.8))
        state = run(pol, s, state, now=1000.0 + 15 * i).state
    assert state.load_factor == 1.0


def test_slo_misses_while_replicas_start_raise_the_load_factor_once_the_hours_budget_burns() -> None:
    from autoscaler.core.slo_budget import SloBudget

    pol = policy(capacity={"sloFeedback": {"max": 3.0}})  # headroom on (default off: AH)
    starting = (StartingReplica("warmup", age_seconds=30.0),)
    # two hours on the books with 5% missed: five times the 1% error budget
    state = replace(CoreState(), slo_budget=SloBudget(judged=100_000.0, missed=5_000.0))
    for i in range(8):
        s = replace(signals(work=4.0, desired=9, ready=8, starting=starting), ttft_histogram=_ttft_histogram(0.8))
        state = run(pol, s, state, now=1000.0 + 15 * i).state
    # a tenth of the settled pace: ×1.65 a minute settled, ×1.05 a minute here, for two minutes
    assert 1.05 < state.load_factor < 1.2


def test_load_factor_relaxes_while_the_slo_holds_with_margin() -> None:
    pol = policy(capacity={"sloFeedback": {"relaxSeconds": 600, "max": 3.0}},
                 scaleDown={"stabilizationWindowSeconds": 15})
    state, desired = replace(CoreState(), load_factor=3.0), 12
    for i in range(400):  # the fleet follows its plan, and the SLO holds with margin at every size
        s = replace(signals(work=4.0, desired=desired), ttft_histogram=_ttft_histogram(1.0))
        r = run(pol, s, state, now=1000.0 + 15 * i)
        state, desired = r.state, r.decision.desired_replicas or desired
        if i == 40:  # ten minutes met
            assert 1.0 <= state.load_factor < 1.2
    # and it keeps relaxing to its floor: the prior was cautious
    assert state.load_factor == pol.capacity.slo_feedback.min


def test_load_factor_holds_while_the_fleet_is_held_above_its_plan() -> None:
    """A fleet held far above its plan (after a peak, by a floor) meets the SLO with a margin the plan did
    not make: that margin says nothing about how hot a replica may run."""
    pol = policy(capacity={"sloFeedback": {"relaxSeconds": 600, "max": 3.0}}, replicas={"min": 40})
    state = replace(CoreState(), load_factor=1.5)
    for i in range(200):  # 4 replica-equivalents of work on 40 replicas, the SLO met throughout
        s = replace(signals(work=4.0, desired=40), ttft_histogram=_ttft_histogram(1.0))
        state = run(pol, s, state, now=1000.0 + 15 * i).state
    assert state.load_factor == 1.5


def test_share_within_interpolates_the_tail_geometrically_inside_a_bucket() -> None:
    h = LatencyHistogram((1.0, 3.0, float("inf")), (50.0, 90.0, 100.0))
    # 50 requests above 1 s, 10 above 3 s: halfway, sqrt(50 × 10) ≈ 22.4 above 2 s (linear says 30).
    assert h.share_within(2.0) == pytest.approx(1.0 - math.sqrt(50.0 * 10.0) / 100.0)
    assert h.linear_share_within(2.0) == pytest.approx(0.7)
    assert h.share_within(1.0) == pytest.approx(0.5) and h.share_within(3.0) == pytest.approx(0.9)
    assert h.share_within(10.0) == h.linear_share_within(10.0) == 0.9
    # Nothing above the bucket: half a request there keeps the tail finite (50 → 0.5: 5 above 2 s).
    top = LatencyHistogram((1.0, 3.0, float("inf")), (50.0, 100.0, 100.0))
    assert top.share_within(2.0) == pytest.approx(0.95) and top.linear_share_within(2.0) == pytest.approx(0.75)
    # An empty bucket has no tail to interpolate: the linear share (flat) it is.
    flat = LatencyHistogram((1.0, 3.0, float("inf")), (90.0, 90.0, 100.0))
    assert flat.share_within(2.0) == flat.linear_share_within(2.0) == pytest.approx(0.9)
    assert LatencyHistogram((1.0,), (0.0,)).share_within(1.0) is None


@given(st.lists(st.integers(0, 50), min_size=2, max_size=6), st.floats(0.0, 12.0))
def test_the_share_within_lies_between_the_bucket_bounds_and_rises_with_the_limit(counts: list[int],
                                                                                 seconds: float) -> None:
    bounds = (*(2.0 * (i + 1) for i in range(len(counts) - 1)), float("inf"))
    h = LatencyHistogram(bounds, tuple(float(c) for c in itertools.accumulate(counts)))
    share = h.share_within(seconds)
    if h.total == 0:
        assert share is None
        return
    assert share is not None
    b = h.bucket(seconds)
    assert b is not None
    assert b[2] / h.total - 1e-12 <= share <= b[3] / h.total + 1e-12  # under the lower bound ≤ share ≤ under the upper
    assert share <= (h.share_within(seconds + 0.5) or 0.0) + 1e-12


def test_no_scale_down_past_the_load_seen_to_hold_the_slo_while_no_knee_is_known() -> None:
    from autoscaler.core.slo_capacity import SloCapacity

    pol = policy(capacity={"learn": True}, scaleDown={"stabilizationWindowSeconds": 15})
    seen = SloCapacity()
    for _ in range(10):  # 0.5 per replica held the SLO; the prior's share (0.8) says 3 replicas carry 2.0
        seen = seen.observe(0.5, 100.0, 0.0)
    state = replace(CoreState(), slo_capacity=seen)
    for i in range(8):
        r = run(pol, signals(work=2.0, desired=4), state, now=1000.0 + 15 * i)
        state = r.state
        assert r.decision.desired_replicas == 4, r.decision.message
    assert r.decision.components["untested_floor"] == 4 and "seen to hold the SLO" in r.decision.message
    # Without that evidence the same ticks trust the prior and step down.
    fresh = CoreState()
    for i in range(8):
        r = run(pol, signals(work=2.0, desired=4), fresh, now=1000.0 + 15 * i)
        fresh = r.state
    assert r.decision.desired_replicas == 3
