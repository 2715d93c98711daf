"""Scale from zero and back (spec.scaleFromZero): the stage on its own, and decide's two paths through it."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState, Measured, ReplicaCounts, Signals, StartingReplica, decide
from autoscaler.core.capacity import CapacityStats
from autoscaler.core.reason import Reason
from autoscaler.core.stages.capacity import planned_share
from autoscaler.core.stages.demand import work_per_request
from autoscaler.core.stages.zero import idle, idle_since, resting, serving_floor, wake, wake_step
from autoscaler.core.state import CoreState as StateClass
from autoscaler.core.waking import Waking
from autoscaler.policy import PolicySpec

from .helpers import policy, signals

T0 = 1_700_000_000.0
GATEWAY: dict[str, Any] = {"query": "sum(gateway_pending)", "threshold": 0, "replicas": 2, "idleSeconds": 900}
FROM_ZERO: dict[str, Any] = {"replicas": {"min": 0, "max": 20}, "scaleFromZero": GATEWAY}


def zero_policy(**over: Any) -> PolicySpec:
    return policy(**{**FROM_ZERO, **over})


def quiet(desired: int, front: float | None = 0.0, age: float = 5.0) -> Signals:
    """Every engine fresh and reporting nothing; the gateway's count `front` (None: unanswered)."""
    s = signals(work=0.0, desired=desired, request_rate=0.0, age=age)
    return replace(s, front_door=Measured(front, age) if front is not None else Measured())


def at_zero(front: Measured) -> Signals:
    """What a source gives at 0 replicas: no engine series, the target at 0, the gateway's count."""
    return Signals(replicas=ReplicaCounts(0, 0), front_door=front)


# ---- the stage ----

def test_wake_starts_the_configured_replicas_above_the_threshold_only() -> None:
    z = zero_policy(scaleFromZero={**GATEWAY, "threshold": 3}).scale_from_zero
    assert z is not None
    assert wake(z, Measured(4.0, 1.0), 60).replicas == 2
    assert wake(z, Measured(3.0, 1.0), 60).replicas == 0  # at the threshold: KEDA's "value > threshold"
    assert wake(z, Measured(), 60).replicas is None
    stale = wake(z, Measured(9.0, 120.0), 60)
    assert stale.replicas is None and "stale" in stale.message


def test_idle_needs_every_engine_signal_fresh_and_zero_and_the_gateway_quiet() -> None:
    p = zero_policy()
    z = p.scale_from_zero
    assert z is not None
    counts = ReplicaCounts(1, 1)
    assert idle(z, quiet(1), counts, 60)
    assert not idle(z, quiet(1, front=1.0), counts, 60)  # one request at the gateway
    assert not idle(z, quiet(1, front=None), counts, 60)  # the gateway unanswered: unknown is never idle
    assert not idle(z, replace(quiet(1), running=Measured(1.0, 5.0)), counts, 60)
    assert not idle(z, replace(quiet(1), waiting=Measured()), counts, 60)  # an engine gauge missing
    assert not idle(z, replace(quiet(1), request_rate=Measured(0.0, 300.0)), counts, 60)  # stale
    assert not idle(z, quiet(1), ReplicaCounts(2, 1), 60)  # a replica on its way
    assert not idle(z, quiet(1), ReplicaCounts(1, 1, starting=(StartingReplica("weight_load", 5.0),)), 60)


def test_the_idle_run_starts_once_and_any_busy_or_unknown_tick_breaks_it() -> None:
    assert idle_since(None, True, T0) == T0
    assert idle_since(T0, True, T0 + 30) == T0
    assert idle_since(T0, False, T0 + 30) is None
    assert idle_since(T0 + 99, True, T0) == T0  # a run stamped in the future (a clock step) restarts now
    z = zero_policy().scale_from_zero
    assert z is not None
    assert not resting(z, T0, T0 + 899) and resting(z, T0, T0 + 900)
    assert serving_floor(z, 0) == 1 and serving_floor(z, 3) == 3 and serving_floor(None, 0) == 0


# ---- decide ----

def test_at_zero_the_gateways_demand_starts_the_model_and_nothing_else_does() -> None:
    p = zero_policy()
    d = decide(p, at_zero(Measured(5.0, 2.0)), CoreState(), T0).decision
    assert (d.desired_replicas, d.reason, d.binding) == (2, Reason.SCALE_UP_FROM_ZERO, "scaleFromZero")
    assert d.components["front_door"] == 5.0 and d.metrics_fresh
    rest = decide(p, at_zero(Measured(0.0, 2.0)), CoreState(), T0).decision
    assert (rest.desired_replicas, rest.reason) == (0, Reason.STEADY) and "resting at 0" in rest.message
    unknown = decide(p, at_zero(Measured()), CoreState(), T0).decision
    assert (unknown.desired_replicas, unknown.reason) == (0, Reason.METRICS_MISSING)
    assert unknown.missing_signals == ("front_door",) and not unknown.metrics_fresh


def test_at_zero_an_unanswered_gateway_does_what_on_missing_metrics_says() -> None:
    p = zero_policy(onMissingMetrics={"action": "fixed", "replicas": 1})
    d = decide(p, at_zero(Measured()), CoreState(), T0).decision
    assert (d.desired_replicas, d.reason) == (1, Reason.SCALE_UP_FLOOR)
    assert "onMissingMetrics fixed -> 1" in d.message


def test_the_wake_is_capped_by_replicas_max() -> None:
    p = zero_policy(replicas={"min": 0, "max": 1}, scaleFromZero={"query": "q", "replicas": 1})
    assert decide(p, at_zero(Measured(50.0, 1.0)), CoreState(), T0).decision.desired_replicas == 1


def test_a_floor_window_at_zero_is_the_floors_business_not_the_gateways() -> None:
    p = zero_policy(replicas={"min": 0, "max": 20, "floorSchedule": [
        {"start": "00:00", "end": "23:59", "minReplicas": 3, "timezone": "UTC"}]})
    d = decide(p, at_zero(Measured(0.0, 1.0)), CoreState(), T0).decision
    assert d.desired_replicas == 3  # the floor, through the ordinary missing-demand path


def test_serving_keeps_one_replica_until_idle_for_idle_seconds_then_goes_to_zero() -> None:
    p = zero_policy()
    state, t = CoreState(), T0
    seen = []
    for _ in range(70):  # 17.5 minutes of 15-s ticks, every engine and the gateway quiet
        r = decide(p, quiet(1), state, t)
        state, t = r.state, t + 15
        seen.append((t - 15 - T0, r.decision.desired_replicas, r.decision.reason))
    first_zero = next(s for s in seen if s[1] == 0)
    # idleSeconds to the tick; the stabilization window (600 s) alone would have let the replica go sooner
    assert first_zero[0] == 900 and first_zero[2] is Reason.SCALE_DOWN_TO_ZERO
    assert all(s[1] == 1 for s in seen if s[0] < 900)  # never under one before that
    assert "no request at the engines or in front of the model for 900 s" in decide(
        p, quiet(1), replace(state, idle_since=T0), T0 + 900).decision.message


def test_a_single_busy_or_unknown_tick_restarts_the_idle_run() -> None:
    p = zero_policy()
    state = replace(CoreState(), idle_since=T0)
    busy = replace(quiet(1), request_rate=Measured(0.1, 5.0))
    after_busy = decide(p, busy, state, T0 + 890).state
    assert after_busy.idle_since is None
    assert decide(p, quiet(1), after_busy, T0 + 905).decision.desired_replicas == 1
    dark = replace(quiet(1), running=Measured(), waiting=Measured(), request_rate=Measured())
    r = decide(p, dark, state, T0 + 890)
    assert r.state.idle_since is None and r.decision.desired_replicas == 1  # metrics missing: hold


def test_a_scale_down_from_load_stops_at_one_with_scale_from_zero() -> None:
    p = zero_policy()
    state, t = CoreState(), T0
    desired = 4
    for _ in range(200):  # 50 minutes at a whisper of load: never idle, so never under one replica
        s = replace(signals(work=0.01, desired=desired, request_rate=0.05), front_door=Measured(0.0, 5.0))
        r = decide(p, s, state, t)
        state, t, desired = r.state, t + 15, r.decision.desired_replicas or desired
    assert desired == 1


def test_without_scale_from_zero_nothing_changes() -> None:
    """A policy without the block never reads the gateway and never remembers an idle run."""
    p = policy(replicas={"min": 0, "max": 20})
    s = replace(quiet(1), front_door=Measured(99.0, 1.0))
    r = decide(p, s, CoreState(), T0)
    assert r.state.idle_since is None and r.decision.reason not in (Reason.SCALE_UP_FROM_ZERO,
                                                                    Reason.SCALE_DOWN_TO_ZERO)
    assert decide(p, at_zero(Measured(99.0, 1.0)), CoreState(), T0).decision.desired_replicas == 0


def test_the_idle_run_survives_a_restart_through_the_status() -> None:
    state = replace(CoreState(), idle_since=T0 + 0.5)
    assert StateClass.from_dict(state.to_dict()).idle_since == T0 + 0.5


@settings(max_examples=300, deadline=None)
@given(desired=st.integers(0, 20), ready=st.integers(0, 20), front=st.none() | st.floats(0, 1e6),
       front_age=st.floats(0, 1e4), engines=st.none() | st.floats(0, 1e3), age=st.floats(0, 1e4),
       idle_for=st.none() | st.floats(0, 1e5))
def test_zero_is_reached_only_from_proven_idleness_and_left_only_for_demand(
        desired: int, ready: int, front: float | None, front_age: float, engines: float | None, age: float,
        idle_for: float | None) -> None:
    p = zero_policy()
    m = Measured() if engines is None else Measured(engines, age)
    s = Signals(request_rate=m, prompt_tokens_rate=m, generation_tokens_rate=m, running=m, waiting=m,
                replicas=ReplicaCounts(desired, min(ready, desired)),
                front_door=Measured() if front is None else Measured(front, front_age))
    state = replace(CoreState(), idle_since=None if idle_for is None else T0 - idle_for)
    d = decide(p, s, state, T0).decision
    assert d.desired_replicas is not None and 0 <= d.desired_replicas <= 20
    fresh = lambda v, a: v is not None and a <= 60  # noqa: E731
    if desired == 0:
        woke = fresh(front, front_age) and front is not None and front > 0
        assert d.desired_replicas == (2 if woke else 0)
    elif d.desired_replicas == 0:
        # down to 0 only on a quiet tick that completes idleSeconds of quiet ones
        assert engines == 0 and fresh(engines, age) and fresh(front, front_age) and front == 0
        assert ready >= desired and idle_for is not None and idle_for >= 900
        assert d.reason is Reason.SCALE_DOWN_TO_ZERO
    else:
        assert d.desired_replicas >= 1


@pytest.mark.parametrize("front", [0.0, 7.0])
def test_the_zero_paths_clear_what_no_engine_carries_across_zero(front: float) -> None:
    state = replace(CoreState(), recent_waiting=((T0 - 15, 4.0),), held_queue=True, panic_until=T0 + 60)
    nxt = decide(zero_policy(), at_zero(Measured(front, 1.0)), state, T0).state
    assert nxt.recent_waiting == () and not nxt.held_queue and nxt.panic_until is None
    assert nxt.recommendations == ((T0, 2 if front else 0),)


def test_a_wake_whose_replica_never_comes_up_hands_over_to_the_ordinary_decision() -> None:
    """Stuck Pending is the ordinary decision's to report: after two high-quantile cold starts without a ready
    replica the wake ends (the ordinary path then holds: no engine reports)."""
    p = zero_policy()
    woke = decide(p, at_zero(Measured(5.0, 1.0)), replace(CoreState(), last_tick=T0 - 15), T0)
    assert woke.state.waking is not None
    starting = Signals(replicas=ReplicaCounts(2, 0, starting=(StartingReplica("node_provisioning", 5.0),)),
                       front_door=Measured(9.0, 1.0))
    early = decide(p, starting, woke.state, T0 + 30)
    assert early.state.waking is not None and early.decision.binding == "scaleFromZero"
    lead = early.decision.lead_time_seconds
    late = decide(p, starting, early.state, T0 + 2 * lead + 1)
    assert late.state.waking is None and late.decision.binding != "scaleFromZero"
    assert late.decision.desired_replicas == 2  # held: demand unknown, never down


def test_a_lowered_max_during_a_wake_is_applied_and_said() -> None:
    p = zero_policy(replicas={"min": 0, "max": 1}, scaleFromZero={**GATEWAY, "replicas": 1})
    state = replace(CoreState(), waking=Waking(T0 - 30, 50.0))
    d = decide(p, replace(at_zero(Measured(9.0, 1.0)), replicas=ReplicaCounts(3, 0)), state, T0).decision
    assert (d.desired_replicas, d.reason) == (1, Reason.SCALE_DOWN_MAX) and "replicas.max" in d.message


def test_the_wake_is_sized_by_how_fast_the_gateways_count_grows() -> None:
    """The first tick has one count: scaleFromZero.replicas. From the next one, the count's growth between the
    times the two counts were taken is the arrival rate (nothing is served yet), and sets the replicas."""
    p = zero_policy()
    woke = decide(p, at_zero(Measured(30.0, 0.0)), CoreState(), T0)
    assert woke.decision.desired_replicas == 2 and woke.state.waking is not None
    assert woke.state.waking.rate is None

    def second(count: float, age: float = 0.0) -> tuple[int | None, float | None]:
        s = Signals(replicas=ReplicaCounts(2, 0, starting=(StartingReplica("weight_load", 15.0),)),
                    front_door=Measured(count, age))
        r = decide(p, s, woke.state, T0 + 15)
        assert r.state.waking is not None
        return r.decision.desired_replicas, r.state.waking.rate

    light, heavy = second(60.0), second(30.0 + 15 * 400.0)
    assert light == (2, pytest.approx(2.0)) and heavy[1] == pytest.approx(400.0)
    assert heavy[0] is not None and heavy[0] > 2  # 400 requests/s need more than the first two
    assert second(30.0, age=15.0) == (2, None)  # the same scrape read again: still one count


def test_the_wake_adds_the_replicas_the_held_backlog_keeps_busy() -> None:
    """The first replicas spend about a cold start at full pace on what the gateway held (a cold start of
    arrivals), so the arrivals need their own replicas at the planned load: the wake asks for
    ceil(work / usable + work / capacity), not ceil(work / usable)."""
    p = zero_policy()
    z = p.scale_from_zero
    assert z is not None
    per_request = work_per_request(p.capacity, None, 0.0, None)
    share = planned_share(p.capacity, 1.0)
    starting = ReplicaCounts(2, 0, starting=(StartingReplica("weight_load", 15.0),))
    for rate in (1.0, 40.0, 120.0, 400.0):
        s = Signals(replicas=starting, front_door=Measured(30.0 + 15 * rate, 0.0))
        step = wake_step(p, z, Waking(T0, 30.0), s, starting, CapacityStats(), 1.0, None, 300.0, T0 + 15)
        work = rate * per_request
        assert step.replicas == max(2, math.ceil(work / share + work - 1e-9)), rate
        if work >= 1.0:  # a replica's worth of backlog: more than the arrivals alone would get
            assert step.replicas > math.ceil(work / share - 1e-9)
