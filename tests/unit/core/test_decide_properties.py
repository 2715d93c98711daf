"""Properties that hold for any signals (hypothesis)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState, Measured, ReplicaCounts, Signals, StartingReplica, decide

from .helpers import policy

POL = policy(replicas={"min": 2, "max": 40}, forecast={"enabled": True},
             scaleDown={"stabilizationWindowSeconds": 120, "maxStepReplicas": 2, "maxStepPercent": 10,
                        "periodSeconds": 30})

finite = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
maybe = st.one_of(st.just(None), finite, st.just(float("nan")), st.just(float("inf")), st.just(-1.0))
age = st.floats(min_value=0, max_value=1000)
stage = st.sampled_from(["scheduling", "node_provisioning", "image_pull", "weight_load", "warmup"])
starting = st.lists(st.builds(StartingReplica, stage=stage, age_seconds=age, stage_age_seconds=age,
                              unschedulable=st.booleans()), max_size=5).map(tuple)


@st.composite
def any_signals(draw: st.DrawFn) -> Signals:
    def m() -> Measured:
        return Measured(draw(maybe), draw(age))

    desired = draw(st.integers(0, 60))
    return Signals(
        request_rate=m(), prompt_tokens_rate=m(), generation_tokens_rate=m(), running=m(), waiting=m(),
        kv_cache_usage=m(), queue_time_p90_seconds=m(), ttft_p90_seconds=m(),
        replicas=ReplicaCounts(desired=desired, ready=draw(st.integers(0, desired)), starting=draw(starting)),
    )


@settings(max_examples=400, deadline=None)
@given(sig=any_signals(), now=st.floats(0, 1e9))
def test_result_stays_within_min_and_max(sig: Signals, now: float) -> None:
    d = decide(POL, sig, CoreState(), now).decision
    assert d.desired_replicas is not None
    assert POL.replicas.min <= d.desired_replicas <= POL.replicas.max


@settings(max_examples=400, deadline=None)
@given(sig=any_signals(), stale_age=st.floats(61, 1e6), now=st.floats(0, 1e9))
def test_stale_demand_never_scales_down(sig: Signals, stale_age: float, now: float) -> None:
    stale = replace(sig, prompt_tokens_rate=Measured(sig.prompt_tokens_rate.value, stale_age))
    d = decide(POL, stale, CoreState(), now).decision
    assert sig.replicas is not None and d.desired_replicas is not None
    assert d.desired_replicas >= min(sig.replicas.desired, POL.replicas.max)


@settings(max_examples=400, deadline=None)
@given(sig=any_signals(), extra=st.floats(0, 1e6), now=st.floats(0, 1e9))
def test_more_demand_never_yields_fewer_replicas(sig: Signals, extra: float, now: float) -> None:
    base = replace(sig, prompt_tokens_rate=Measured(1000.0, 1.0), generation_tokens_rate=Measured(10.0, 1.0))
    more = replace(base, prompt_tokens_rate=Measured(1000.0 + extra, 1.0))
    a = decide(POL, base, CoreState(), now).decision.desired_replicas
    b = decide(POL, more, CoreState(), now).decision.desired_replicas
    assert a is not None and b is not None and b >= a


@settings(max_examples=150, deadline=None)
@given(works=st.lists(st.floats(0, 50), min_size=5, max_size=40), start=st.integers(2, 40))
def test_scale_down_respects_window_and_step(works: list[float], start: int) -> None:
    state, current, t = CoreState(), start, 0.0
    history: list[tuple[float, int]] = []  # (time, raw recommendation proxy = desired when rising)
    for w in works:
        sig = Signals(prompt_tokens_rate=Measured(w * 10000, 1.0), generation_tokens_rate=Measured(0.0, 1.0),
                      replicas=ReplicaCounts(desired=current, ready=current))
        r = decide(POL, sig, state, t)
        d = r.decision.desired_replicas
        assert d is not None
        if d < current:
            assert current - d <= max(2, current // 10)  # the step
            window = [rec for (tt, rec) in r.state.recommendations if tt >= t - 120]
            assert d >= max(window) or d == current - max(2, current // 10)
            assert all(rec <= current for rec in window)  # nothing in the window wanted what we remove
        history.append((t, d))
        state, current, t = r.state, d, t + 15.0


@settings(max_examples=1000, deadline=None)
@given(n_starting=st.integers(1, 10), ready=st.integers(1, 10), work=st.floats(1, 30),
       waiting=st.floats(0, 500), stage_name=st.sampled_from(["node_provisioning"]))
def test_starting_replicas_are_not_reordered(n_starting: int, ready: int, work: float, waiting: float,
                                             stage_name: str) -> None:
    """Constant demand, replicas starting on schedule (their stage is not overdue): the queue that builds up
    while they start does not make later ticks want more than the first full tick did. (A replica whose
    stage is overdue is late: the backlog it lets grow is real and may need more capacity.)"""
    state = CoreState()
    desired = ready + n_starting
    wanted = []
    work_per_request = min(work, ready) / 10.0  # every request the same work: demand is `work`
    for i in range(5):
        t = i * 15.0
        # The queue moves as the data says it must: it grows by the unserved demand, drains by spare capacity;
        # while it stands the ready replicas serve flat out (what the engine's token counters then show).
        queue = max(0.0, waiting + t * (work - ready) / work_per_request)
        served = ready if queue > 0 else min(work, ready)
        sig = Signals(
            prompt_tokens_rate=Measured(served * 10000, 1.0), generation_tokens_rate=Measured(0.0, 1.0),
            request_rate=Measured(served / work_per_request, 1.0), waiting=Measured(queue, 1.0),
            replicas=ReplicaCounts(desired=desired, ready=ready, starting=tuple(
                StartingReplica(stage_name, age_seconds=t, stage_age_seconds=t) for _ in range(n_starting))),  # type: ignore[arg-type]
        )
        r = decide(POL, sig, state, t)
        state = r.state
        wanted.append(r.decision.components.get("reactive", 0))
    # From the tick where queue growth is confirmed (two intervals) on, the want does not climb.
    assert max(wanted[2:]) <= wanted[2] + 1, wanted
