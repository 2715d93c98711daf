"""Regression tests for the decision core's hardening (issue 11): every signal the decision uses must be
trusted before it scales down, garbage is recognised, restarts and clock jumps do not skip the window."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest

from autoscaler.core import CoreState, Measured, Reason, ReplicaCounts, Signals, decide
from autoscaler.policy import PolicySpec

from .helpers import policy, signals

WINDOW = 60.0


def _scaled_down_state(pol: PolicySpec, desired: int = 10, work: float = 3.0) -> tuple[CoreState, float]:
    """A state whose window is full of low recommendations: the next fresh tick scales down."""
    state, t = CoreState(), 0.0
    while t <= WINDOW + 30:
        state = decide(pol, signals(work=work, desired=desired, request_rate=work * 10), state, t).state
        t += 15.0
    return state, t


def _pol(**kw: object) -> PolicySpec:
    return policy(scaleDown={"stabilizationWindowSeconds": WINDOW, "maxStepReplicas": 100, "maxStepPercent": 100},
                  **kw)


def test_fresh_low_demand_does_scale_down_here() -> None:
    """The baseline the tests below depart from: with every signal fresh this state scales 10 -> 4."""
    pol = _pol()
    state, t = _scaled_down_state(pol)
    d = decide(pol, signals(work=3.0, desired=10, request_rate=30.0), state, t).decision
    assert d.desired_replicas == 4 and d.reason is Reason.SCALE_DOWN and d.metrics_fresh


STALE_CASES = {
    "waiting": lambda s: replace(s, waiting=Measured(400.0, 600.0)),  # the case: 400 queued, stale
    "waiting absent": lambda s: replace(s, waiting=Measured()),
    "kv_cache_usage": lambda s: replace(s, kv_cache_usage=Measured(0.99, 600.0)),
    "request_rate": lambda s: replace(s, request_rate=Measured(30.0, 600.0)),
    "request_rate absent": lambda s: replace(s, request_rate=Measured()),
    "queue_time_p90_seconds": lambda s: replace(s, queue_time_p90_seconds=Measured(5.0, 600.0)),
    "ttft_p90_seconds": lambda s: replace(s, ttft_p90_seconds=Measured(9.0, 600.0)),
    "running": lambda s: replace(s, running=Measured(500.0, 600.0)),
    "waiting NaN age": lambda s: replace(s, waiting=Measured(400.0, float("nan"))),
    "waiting negative age": lambda s: replace(s, waiting=Measured(400.0, -5.0)),
}


@pytest.mark.parametrize("case", sorted(STALE_CASES))
def test_any_stale_signal_the_decision_uses_blocks_scale_down(case: str) -> None:
    pol = _pol(capacity={"maxConcurrency": 64})
    state, t = _scaled_down_state(pol)
    sig = STALE_CASES[case](signals(work=3.0, desired=10, request_rate=30.0))
    d = decide(pol, sig, state, t).decision
    assert d.desired_replicas == 10
    assert d.reason is Reason.METRICS_MISSING and not d.metrics_fresh
    assert case.split()[0] in d.missing_signals
    assert "never scale down" in d.message and case.split()[0] in d.message


def test_stale_signals_still_allow_a_scale_up_on_what_is_known() -> None:
    pol = _pol()
    sig = replace(signals(work=20.0, desired=4, request_rate=200.0), waiting=Measured(400.0, 600.0))
    d = decide(pol, sig, CoreState(), 1000.0).decision
    assert (d.desired_replicas or 0) > 4 and d.reason is not Reason.METRICS_MISSING
    assert not d.metrics_fresh and d.missing_signals == ("waiting",)
    assert "waiting stale, missing or implausible: no scale-down" in d.message


def test_a_stale_tick_is_no_evidence_for_a_later_scale_down() -> None:
    """Recommendations made while a signal was stale count as the current count in the window."""
    pol = _pol()
    state, t = CoreState(), 0.0
    for _ in range(8):  # two windows of stale waiting
        sig = replace(signals(work=3.0, desired=10, request_rate=30.0), waiting=Measured(400.0, 600.0))
        state = decide(pol, sig, state, t).state
        t += 15.0
    d = decide(pol, signals(work=3.0, desired=10, request_rate=30.0), state, t).decision
    assert d.desired_replicas == 10 and d.reason is Reason.STABILIZING


def test_no_capacity_is_learned_while_a_signal_is_stale() -> None:
    pol = _pol(capacity={"learn": True})
    state = CoreState()
    for i in range(10):
        sig = replace(signals(work=8.0, desired=4, waiting=50.0), request_rate=Measured(80.0, 600.0))
        state = decide(pol, sig, state, 15.0 * i).state
    assert state.capacity.samples == ()


IMPLAUSIBLE = {
    "waiting": Measured(1e308, 5.0),
    "kv_cache_usage": Measured(1.5, 5.0),
    "running": Measured(-3.0, 5.0),
    "request_rate": Measured(float("inf"), 5.0),
    "queue_time_p90_seconds": Measured(float("nan"), 5.0),
}


@pytest.mark.parametrize("name", sorted(IMPLAUSIBLE))
def test_implausible_values_are_reported_and_treated_as_missing(name: str) -> None:
    pol = _pol(capacity={"maxConcurrency": 64})
    state, t = _scaled_down_state(pol)
    implausible: dict[str, Any] = {name: IMPLAUSIBLE[name]}
    sig = replace(signals(work=3.0, desired=10, request_rate=30.0), **implausible)
    d = decide(pol, sig, state, t).decision
    assert d.implausible_signals == (name,)
    assert name in d.missing_signals and d.desired_replicas == 10 and d.reason is Reason.METRICS_MISSING


def test_implausible_demand_takes_the_missing_metrics_path() -> None:
    pol = _pol(onMissingMetrics={"action": "fixed", "replicas": 12})
    sig = replace(signals(work=3.0, desired=10), prompt_tokens_rate=Measured(1e300, 5.0))
    d = decide(pol, sig, CoreState(), 0.0).decision
    assert d.desired_replicas == 12 and d.reason is Reason.METRICS_MISSING
    assert d.implausible_signals == ("prompt_tokens_rate",) and "prompt_tokens_rate" in d.missing_signals


def test_idle_fleet_with_an_aging_last_known_quantile_still_scales_down() -> None:
    """Prometheus re-serves the last p90 with its age while no request finishes: at idle that is expected."""
    pol = _pol()
    state, t = CoreState(), 0.0
    for _ in range(8):
        sig = replace(signals(work=0.0, desired=10, request_rate=0.0), kv_cache_usage=Measured(),
                      queue_time_p90_seconds=Measured(0.3, 600.0 + t), ttft_p90_seconds=Measured())
        r = decide(pol, sig, state, t)
        state, t = r.state, t + 15.0
    assert r.decision.desired_replicas == 1 and r.decision.metrics_fresh


def test_restored_state_older_than_the_window_is_a_fresh_start() -> None:
    """20 replicas, state saved, controller down for longer than the window: no 20 -> 10 at once."""
    pol = _pol()
    state, t = _scaled_down_state(pol, desired=20, work=9.5)
    restored = CoreState.from_dict(json.loads(json.dumps(state.to_dict())))
    t += 3600.0
    d = decide(pol, signals(work=9.5, desired=20), restored, t)
    assert d.decision.desired_replicas == 20 and d.decision.reason is Reason.STABILIZING
    state = d.state
    while t < 3600.0 + 2 * WINDOW + 200:  # a whole window of low recommendations later, it does
        t += 15.0
        r = decide(pol, signals(work=9.5, desired=20), state, t)
        state = r.state
        if r.decision.desired_replicas != 20:
            break
    assert r.decision.desired_replicas == 10 and t - 3600.0 >= WINDOW


def test_a_window_shorter_than_the_interval_is_honoured_not_taken_for_a_restart() -> None:
    pol = policy(scaleDown={"stabilizationWindowSeconds": 1, "maxStepReplicas": 100, "maxStepPercent": 100})
    first = decide(pol, signals(work=1.0, desired=20), CoreState(), 0.0)
    assert decide(pol, signals(work=1.0, desired=20), first.state, 15.0).decision.desired_replicas == 2


def test_missing_metrics_above_max_says_it_clamps_to_max() -> None:
    pol = _pol(replicas={"min": 1, "max": 8})
    d = decide(pol, Signals(replicas=ReplicaCounts(desired=12, ready=12)), CoreState(), 0.0).decision
    assert d.desired_replicas == 8
    assert d.reason is Reason.SCALE_DOWN_MAX and d.binding == "max" and not d.metrics_fresh
    assert "clamped to replicas.max (8)" in d.message and "never scale down" not in d.message


def test_partly_stale_metrics_above_max_say_they_clamp_to_max() -> None:
    pol = _pol(replicas={"min": 1, "max": 8})
    sig = replace(signals(work=3.0, desired=12), waiting=Measured(400.0, 600.0))
    d = decide(pol, sig, CoreState(), 0.0).decision
    assert d.desired_replicas == 8 and d.reason is Reason.SCALE_DOWN_MAX
    assert "clamped to replicas.max (8)" in d.message and "never scale down" not in d.message


@pytest.mark.parametrize("age", [float("nan"), -1.0, float("inf"), -float("inf")])
def test_an_unreadable_age_is_never_fresh(age: float) -> None:
    assert Measured(5.0, age).fresh(60.0) is None
    assert Measured(5.0, age).fresh(float("inf")) is None
    assert Measured(5.0, age).stale(60.0)
    pol = _pol()
    sig = replace(signals(work=0.0, desired=10), prompt_tokens_rate=Measured(0.0, age))
    d = decide(pol, sig, CoreState(), 0.0).decision
    assert d.reason is Reason.METRICS_MISSING and d.desired_replicas == 10


@pytest.mark.parametrize("age", [float("nan"), -1.0, float("inf")])
def test_target_with_an_unreadable_age_writes_nothing(age: float) -> None:
    sig = replace(signals(work=1.0, desired=10), replicas=ReplicaCounts(desired=10, ready=10, age_seconds=age))
    assert decide(_pol(), sig, CoreState(), 0.0).decision.desired_replicas is None


def test_clock_going_backwards_keeps_history_bounded_and_holds_one_window() -> None:
    pol = _pol()
    state, t = _scaled_down_state(pol, desired=10, work=9.5)  # the window holds recommendations of 10
    jump = t - 86400.0  # the clock jumps back a day
    t, sizes, wanted = jump, [], []
    for _ in range(40):
        r = decide(pol, signals(work=3.0, desired=10), state, t)
        state, t = r.state, t + 15.0
        sizes.append(len(state.recommendations))
        wanted.append((t - 15.0 - jump, r.decision.desired_replicas))
    # The entries from "the future" count as made at the jump: they hold one window, not a day...
    assert all(d == 10 for dt, d in wanted if dt < WINDOW)
    assert any(d == 4 for _, d in wanted)
    # ...and the history stays ordered and bounded.
    assert max(sizes) <= 2 * WINDOW / 15 + 3 and sizes[-1] <= WINDOW / 15 + 2
    assert list(state.recommendations) == sorted(state.recommendations)


def test_panic_from_before_a_backwards_clock_jump_lasts_at_most_hold_seconds() -> None:
    pol = _pol()
    r = decide(pol, signals(work=3.0, desired=10, queue_p90=9.0), CoreState(), 10_000.0)
    assert r.decision.panic
    back = 5_000.0
    r = decide(pol, signals(work=3.0, desired=10), r.state, back)
    assert r.state.panic_until is not None and r.state.panic_until <= back + pol.scale_up.panic.hold_seconds
    assert not decide(pol, signals(work=3.0, desired=10), r.state, back + 121.0).decision.panic


def test_non_finite_clock_writes_nothing() -> None:
    for now in (math.nan, math.inf):
        assert decide(_pol(), signals(work=1.0, desired=3), CoreState(), now).decision.desired_replicas is None


@pytest.mark.parametrize("field,value", [
    ("recommendations", [["x", 3]]), ("recommendations", [[1.0, -2]]), ("recommendations", [[1.0, 2.5]]),
    ("decisions", 7), ("panicUntil", "soon"), ("panicUntil", True), ("lastWaiting", [1.0]),
    ("capacity", [float("inf")]), ("lastGrowth", "x"), ("lastTick", [1]), ("coldStart", [1, 2]),
    ("burstHeld", [[1.0, -3]]), ("burstHeld", "x"), ("beyondHeadroom", "yes"), ("beyondHeadroom", 1),
    ("heldQueue", "no"), ("heldQueue", 0), ("recentWaiting", [[1.0]]), ("recentWaiting", [[1.0, "x"]]),
    ("recentWaiting", 3),
])
def test_corrupt_stored_state_raises_a_value_error_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"coreState.{field}"):
        CoreState.from_dict({field: value})


def test_the_queue_window_survives_a_restart_and_a_state_from_before_it_reads() -> None:
    recent = ((940.0, 600.0), (955.0, 420.5))
    stored = json.loads(json.dumps(replace(CoreState(), recent_waiting=recent).to_dict()))
    assert CoreState.from_dict(stored).recent_waiting == recent
    assert CoreState.from_dict({"lastWaiting": [985.0, 40.0]}).recent_waiting == ((985.0, 40.0),)
    assert CoreState.from_dict({"lastWaiting": None}).recent_waiting == ()


def test_an_episode_past_the_feedbacks_reach_survives_a_restart() -> None:
    stored = json.loads(json.dumps(replace(CoreState(), beyond_headroom=True).to_dict()))
    assert CoreState.from_dict(stored).beyond_headroom
    assert not CoreState.from_dict({}).beyond_headroom  # a state written before the field existed


def test_a_held_queue_episode_survives_a_restart() -> None:
    stored = json.loads(json.dumps(replace(CoreState(), held_queue=True).to_dict()))
    assert CoreState.from_dict(stored).held_queue
    assert not CoreState.from_dict({}).held_queue  # a state written before the field existed


def test_stored_cold_start_samples_that_are_not_durations_are_dropped() -> None:
    state = CoreState.from_dict({"coldStart": {"warmup/default": [30.0, float("nan"), -1.0, float("inf"), 50.0]}})
    assert state.coldstart.get("warmup", "default") == (30.0, 50.0)


def test_restored_history_is_put_in_time_order() -> None:
    state = CoreState.from_dict({"recommendations": [[30.0, 4], [10.0, 9]]})
    assert state.recommendations == ((10.0, 9), (30.0, 4))
