"""The engine's evidence of the SLO's knee, read at loads below it (autoscaler/core/engine_knee.py)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState
from autoscaler.core.engine_knee import MIN_BINS, REACH, EngineKnee
from autoscaler.core.signals import LatencyHistogram, Signals
from autoscaler.core.slo_budget import SloBudget
from autoscaler.core.slo_capacity import EXPLORE, LOW, MIN_WINDOWS, RATIO, SloCapacity, bin_of
from autoscaler.core.stages.capacity import (
    ENGINE_KNEE_LIFT,
    FOUND_UNDER_ENGINE,
    PRIOR_SLO_SHARE,
    Capacity,
    latency_ratio,
    lifted_share,
    measured_knee,
)

from .helpers import capacity_stage as _stage
from .helpers import policy

CAPACITY, C = 0.7, 17.0  # a replica saturating at 0.7 of the prior; n = C·L / (CAPACITY − L)
N_MAX = 300.0  # sequences the KV cache holds


def _batch(load: float) -> float:
    return C * load / (CAPACITY - load)


def _mid(load: float) -> float:
    """The centre of the bin `load` falls in: the fits read each bin at its centre."""
    return LOW * RATIO ** ((bin_of(load) or 0) + 0.5)


def _seen(loads: list[float], latency: object = None, kv: bool = True, times: int = int(MIN_WINDOWS),
          grows: bool = True) -> EngineKnee:
    """The evidence of `times` windows at each load; `grows` False: a batch that does not grow (no batch knee)."""
    e = EngineKnee()
    for _ in range(times):
        for load in loads:
            n = _batch(_mid(load)) if grows else 10.0
            lat = latency(_mid(load)) if callable(latency) else None
            e = e.observe(load, n, lat, n / N_MAX if kv else None)
    return e


def test_the_batch_growing_towards_saturation_says_where_the_kv_cache_fills() -> None:
    e = _seen([0.3, 0.36, 0.42, 0.5])
    # The load at which the mean batch reaches what the KV cache holds: far under the throughput.
    expected = CAPACITY * N_MAX / (N_MAX + C)
    assert e.knee(None) == pytest.approx(expected, rel=1e-6)
    # A cap on concurrent sequences under the KV cache's comes first.
    assert e.knee(100) == pytest.approx(CAPACITY * 100 / (100 + C), rel=1e-6)
    # Without KV use the batch fit still bounds the knee at the throughput itself.
    assert _seen([0.3, 0.36, 0.42, 0.5], kv=False).knee(None) == pytest.approx(CAPACITY, rel=1e-6)


def test_latency_rising_with_load_says_where_it_reaches_the_slo_first() -> None:
    # The SLO's quantile at 40% of the SLO at load 0.2, rising e-fold per 0.1 of load: at the SLO at
    # 0.2 + 0.1·ln(2.5) ≈ 0.29, before the batch saturates.
    e = _seen([0.2, 0.24, 0.28], latency=lambda load: 0.4 * math.exp((load - 0.2) / 0.1))
    assert e.knee(None) == pytest.approx(0.2 + 0.1 * math.log(2.5), rel=1e-6)


def test_latency_that_rises_like_a_queue_is_read_near_the_top_not_through_the_flat_loads() -> None:
    # A queue's latency is convex in load: flat far under the knee, then a hockey stick. Here the SLO's
    # quantile is 0.03 ÷ (0.5 − load) of the SLO, at the SLO at 0.47. A line through every bin (0.12 to
    # 0.44) is pulled flat by the low loads and reaches the SLO near 0.60; the bins within LOCAL_SPAN of
    # the highest one read the rise where it happens.
    def queue(load: float) -> float:
        return 0.03 / (0.5 - load)

    e = _seen([0.12, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.44], latency=queue, kv=False, grows=False)
    assert e.knee(None) == pytest.approx(0.47, rel=0.10)
    # With too few high bins to fit on their own, every bin is fitted as before.
    wide = _seen([0.2, 0.3, 0.44], latency=queue, kv=False, grows=False).knee(None)
    assert wide is not None and wide > 0.47


def test_too_little_evidence_is_no_knee() -> None:
    assert EngineKnee().knee(None) is None
    assert _seen([0.3, 0.4, 0.5], times=int(MIN_WINDOWS) - 1).knee(None) is None  # bins not spoken yet
    assert _seen([0.40, 0.44]).knee(None) is None  # too few bins (MIN_BINS)
    assert _seen([0.40, 0.42, 0.44]).knee(None) is None  # bins spanning under a quarter in load
    assert MIN_BINS == 3


def test_a_batch_that_does_not_grow_with_load_and_latency_that_does_not_rise_say_nothing() -> None:
    e = EngineKnee()
    for _ in range(int(MIN_WINDOWS)):
        for load in (0.2, 0.3, 0.4):
            e = e.observe(load, 10.0, 0.2, None)
    assert e.knee(None) is None


def test_latency_over_the_slo_at_the_lowest_load_is_prefill_not_load() -> None:
    e = _seen([0.3, 0.36, 0.42, 0.5], latency=lambda load: 1.5 + load, kv=False)
    # The latency says nothing (over the SLO everywhere); the batch still bounds the knee.
    assert e.knee(None) == pytest.approx(CAPACITY, rel=1e-6)


def test_a_knee_past_the_reach_is_no_knee_but_lifts_at_the_reach() -> None:
    far = 0.05 * REACH * 1.5  # saturating well past REACH × the highest load seen
    e = EngineKnee()
    for _ in range(int(MIN_WINDOWS)):
        for load in (0.03, 0.04, 0.05):
            e = e.observe(load, C * _mid(load) / (far - _mid(load)), None, None)
    assert e.knee(None) is None
    # For the prior's lift it is read at the reach: REACH past the highest bin that spoke (decision change AE).
    assert e.lift(None) == pytest.approx(REACH * _mid(0.05), rel=1e-9)
    # One window at a far higher load has not spoken: it does not stretch the reach.
    assert e.observe(0.2, 1000.0, None, None).knee(None) is None
    assert e.observe(0.2, 1000.0, None, None).lift(None) == pytest.approx(REACH * _mid(0.05), rel=1e-9)
    near = EngineKnee()
    for _ in range(int(MIN_WINDOWS)):
        for load in (0.03, 0.04, 0.05):
            near = near.observe(load, C * _mid(load) / (0.07 - _mid(load)), None, None)
    assert near.knee(None) == pytest.approx(0.07, rel=1e-6) == near.lift(None)


def test_an_understated_prior_is_lifted_by_a_knee_past_the_reach_and_a_found_knee_is_not_explored_to_it() -> None:
    # A prior 30% low: the plan keeps loads near 0.5-0.62 of it while the replica saturates at 2.0. The fits
    # put the knee past 1.5× those loads; read at that reach it still lifts the plan past the prior's share.
    e = EngineKnee()
    for _ in range(int(MIN_WINDOWS)):
        for load in (0.5, 0.56, 0.62):
            e = e.observe(load, C * _mid(load) / (2.0 - _mid(load)), None, None)
    reach = REACH * _mid(0.62)
    assert e.knee(None) is None and e.lift(None) == pytest.approx(reach, rel=1e-9)
    assert lifted_share(e.lift(None)) == pytest.approx(ENGINE_KNEE_LIFT * reach, rel=1e-9)
    assert lifted_share(e.lift(None)) > PRIOR_SLO_SHARE
    # The capacity stage plans there, says why, and explores no knee of the misses towards the reach.
    cp = _stage(e)
    assert cp.engine_knee is None and cp.engine_lift == pytest.approx(reach, rel=1e-9)
    assert cp.factor == pytest.approx(ENGINE_KNEE_LIFT * reach, rel=1e-6)
    assert cp.explain()["engine_knee_at_reach"] == pytest.approx(reach, abs=1e-4)
    assert measured_knee(0.5, e.knee(None), EXPLORE) == 0.5


def test_absurd_windows_are_ignored() -> None:
    e = EngineKnee()
    for load, n in ((float("nan"), 5.0), (-1.0, 5.0), (0.5, 0.0), (0.5, None), (0.5, float("inf"))):
        e = e.observe(load, n, 0.5, 0.5)
    assert e == EngineKnee()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 50), st.floats(0.01, 1e4), st.one_of(st.none(), st.floats(1e-4, 1e3)),
                          st.one_of(st.none(), st.floats(0, 1))), max_size=60))
# Found by the search: a batch of a fraction of a sequence lost 0.1% of its knee to a kvSum rounded to 3 places.
@example([(2.0, 1.0, None, None), (3.0, 1.0, None, None), (1.0, 0.015625, None, 0.75)])
@example([(0.5, 9000.0, None, None), (0.7, 9500.0, None, None), (0.9, 9990.0, None, None)])
# Found by the search: a lift at the reach, 63.50163767507795 against the bound's 63.50163767507793 (the bin's
# midpoint computed as RATIO**(b + 0.5) here and RATIO**b × √RATIO in the code): the bounds allow rounding.
@example([(2.0, 1.0, None, None), (4.0, 5.0, None, None), (41.0, 6.0, None, None)])
def test_any_windows_give_no_knee_or_a_finite_one_within_reach_and_survive_json(
        windows: list[tuple[float, float, float | None, float | None]]) -> None:
    e = EngineKnee()
    for _ in range(int(MIN_WINDOWS)):
        for load, n, lat, kv in windows:
            e = e.observe(load, n, lat, kv)
    k, lift = e.knee(None), e.lift(None)
    ulps = 1.0 + 1e-12  # the bound and the code compute a bin's midpoint in different orders
    if k is not None:
        top = max(LOW * RATIO ** (b[0] + 0.5) for b in e.bins if max(b[1], b[3]) >= MIN_WINDOWS)
        assert math.isfinite(k) and LOW <= k <= REACH * top * ulps
    # The lift is the knee where there is one, else at most the reach (never past it, never under LOW).
    assert lift == k if k is not None else lift is None or LOW <= lift <= REACH * ulps * max(
        LOW * RATIO ** (b[0] + 0.5) for b in e.bins if max(b[1], b[3]) >= MIN_WINDOWS)
    back = EngineKnee.from_dict(json.loads(json.dumps(e.to_dict())))
    assert [b[0] for b in back.bins] == [b[0] for b in e.bins]
    kb = back.knee(None)
    assert (k is None) == (kb is None) and (k is None or kb == pytest.approx(k, rel=1e-3))


@pytest.mark.parametrize(("bad", "named"), [
    ("x", "mapping"), ({"bins": "x"}, "bins"), ({"bins": [[1, 2]]}, "each bin"),
    ({"bins": [[1, 0, 1, 0, 0]]}, "windows"),
    ({"bins": [[1, 1, 0, 0, 0]]}, "Σ1/n"), ({"bins": [[1.5, 1, 1, 0, 0]]}, "whole number"),
    ({"bins": [[1, float("nan"), 1, 0, 0]]}, "finite"), ({"bins": [[-1, 1, 1, 0, 0]]}, "whole number"),
    ({"bins": [[500, 1, 1, 0, 0]]}, "whole number"), ({"kvWindows": -1}, "kvWindows"), ({"kvSum": True}, "finite")])
def test_unreadable_stored_evidence_names_the_problem(bad: object, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        EngineKnee.from_dict(bad)


def test_core_state_keeps_the_engine_evidence_across_a_restart() -> None:
    state = CoreState(engine_knee=_seen([0.3, 0.36, 0.42, 0.5]))
    back = CoreState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert back.engine_knee.knee(None) == pytest.approx(state.engine_knee.knee(None), rel=1e-3)
    assert CoreState.from_dict({k: v for k, v in state.to_dict().items() if k != "engineKnee"}).engine_knee == (
        EngineKnee())  # a state written before the field existed
    with pytest.raises(ValueError, match="engineKnee"):
        CoreState.from_dict({**state.to_dict(), "engineKnee": {"bins": [[1, 0, 1, 0, 0]]}})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=6, max_size=6), st.floats(0.01, 0.999))
def test_the_quantile_inverts_the_share_within(counts: list[int], q: float) -> None:
    bounds = (0.1, 0.25, 0.5, 1.0, 2.5, math.inf)
    cumulative = tuple(float(c) for c in sorted(counts))
    h = LatencyHistogram(bounds, cumulative, 0.0)
    x = h.quantile(q)
    if x is None:
        assert h.total == 0 or cumulative[-2] < q * h.total  # no requests, or the quantile is past 2.5 s
        return
    share = h.share_within(x)
    assert share is not None and share >= q - 1e-9
    if x > 0:  # nothing smaller reaches the share
        below = h.share_within(x * (1 - 1e-6))
        assert below is not None and below <= q + 1e-6


# how the capacity stage uses it
def test_an_engine_knee_lifts_the_plan_15_percent_past_it_only_where_that_passes_the_priors_share() -> None:
    assert _stage(EngineKnee()).factor == PRIOR_SLO_SHARE  # no evidence: the prior's share
    # The KV cache fills at 0.7 × 300/317 ≈ 0.662; 15% past it is 0.761, under the share (0.8): the misses decide.
    low = _seen([0.3, 0.36, 0.42, 0.5])
    assert low.knee(None) == pytest.approx(0.6625, abs=1e-3) and _stage(low).factor == PRIOR_SLO_SHARE
    high = _seen([0.3, 0.36, 0.42, 0.5, 0.6], kv=False)  # saturating at CAPACITY = 0.7: 15% past it is 0.805
    assert high.knee(None) == pytest.approx(CAPACITY) and _stage(high).factor == pytest.approx(0.805)
    assert lifted_share(CAPACITY) == pytest.approx(ENGINE_KNEE_LIFT * CAPACITY)
    assert lifted_share(None) == PRIOR_SLO_SHARE
    lifted = EngineKnee()
    for _ in range(int(MIN_WINDOWS)):
        for load in (0.5, 0.6, 0.7):
            lifted = lifted.observe(load, C * _mid(load) / (1.0 - _mid(load)), None, None)  # saturating at 1.0
    assert lifted.knee(None) == pytest.approx(1.0)
    cp = _stage(lifted)
    assert cp.factor == pytest.approx(1.15) and cp.engine_knee == pytest.approx(1.0)
    assert cp.explain()["engine_knee"] == 1.0


def test_only_a_clean_window_feeds_the_engine_evidence() -> None:
    hist = LatencyHistogram((0.5, 2.0, math.inf), (150.0, 300.0, 300.0), 5.0)
    sig = Signals(ttft_histogram=hist)
    clean = _stage(EngineKnee(), steady=900.0, running=40.0, sig=sig)
    ((b, n, s, qn, qs),) = clean.engine.bins
    assert b == bin_of(0.5) and (n, qn) == (1.0, 1.0) and s == pytest.approx(0.1)  # 2.0 work on 4 replicas, 10 each
    assert math.exp(qs) == pytest.approx((hist.quantile(0.99) or 0) / 2.0)  # the SLO's quantile ÷ the 2-s SLO
    assert _stage(EngineKnee(), steady=None, running=40.0, sig=sig).engine.bins == ()  # not steady
    assert _stage(EngineKnee(), steady=990.0, running=40.0, sig=sig).engine.bins == ()  # steady too briefly
    assert _stage(EngineKnee(), steady=900.0, running=None, sig=sig).engine.bins == ()  # no batch size


def test_the_latency_ratio_is_the_slos_quantile_over_the_slo_taking_the_worse_of_ttft_and_queue_time() -> None:
    ttft = LatencyHistogram((1.0, 4.0, math.inf), (250.0, 300.0, 300.0), 5.0)
    queue = LatencyHistogram((0.1, 1.0, math.inf), (299.0, 300.0, 300.0), 5.0)
    both = policy(slo={"ttftSeconds": 2.0, "queueTimeSeconds": 0.5, "quantile": 0.99})
    r_ttft = (ttft.quantile(0.99) or 0) / 2.0
    r_queue = (queue.quantile(0.99) or 0) / 0.5
    assert latency_ratio(both, Signals(ttft_histogram=ttft, queue_time_histogram=queue)) == pytest.approx(
        max(r_ttft, r_queue))
    assert latency_ratio(both, Signals(ttft_histogram=ttft)) == pytest.approx(r_ttft)
    few = LatencyHistogram((1.0, math.inf), (150.0, 150.0), 5.0)  # under 2 ÷ (1 − 0.99) = 200 requests
    assert latency_ratio(both, Signals(ttft_histogram=few)) is None


def _saturating(at: float, loads: tuple[float, ...]) -> EngineKnee:
    """Engine evidence of a replica whose batch grows towards saturation at `at` (no KV use: the knee is `at`)."""
    e = EngineKnee()
    for _ in range(int(MIN_WINDOWS)):
        for load in loads:
            e = e.observe(load, C * _mid(load) / (at - _mid(load)), None, None)
    return e


def _missed_at(load: float, ready: float = 0.0) -> SloCapacity:
    """Enough windows with 10% missed at `load` per replica (on `ready` replicas) for a knee in its bin."""
    slo = SloCapacity()
    for _ in range(int(MIN_WINDOWS)):
        slo = slo.observe(load, 1000.0, 100.0, ready)
    return slo


def test_a_measured_knee_under_the_engines_is_raised_towards_it_only_by_the_budgets_exploration() -> None:
    slo = _missed_at(0.6)  # a knee at its bin's lower edge
    over = slo.knee(0.99)[0]
    assert over is not None and over == pytest.approx(LOW * RATIO ** (bin_of(0.6) or 0))

    def factor(engine: EngineKnee, budget: SloBudget | None = None) -> float:
        return _stage(engine, slo=slo, budget=budget).factor

    far = _saturating(0.9, (0.45, 0.55, 0.65))
    near = _saturating(0.54, (0.3, 0.36, 0.42))
    under = _saturating(0.5, (0.25, 0.3, 0.36))
    assert far.knee(None) == pytest.approx(0.9) and near.knee(None) == pytest.approx(0.54)
    assert under.knee(None) == pytest.approx(0.5)
    # over ≈ 0.594: the engine's knee lifted (×1.15) is 1.035, 0.621 and 0.575.
    assert 0.54 < over < ENGINE_KNEE_LIFT * 0.54 < over * (1.0 + EXPLORE) and over > ENGINE_KNEE_LIFT * 0.5
    # The engine says a steady load queues only well past the misses: they came from a transient, and the
    # plan explores past them as far as the hours' budget allows (+10% with no budget spent).
    assert factor(far) == pytest.approx(over * (1.0 + EXPLORE))
    # Past the engine's own knee, but never past where a right prior's learner settles: 15% past it.
    assert factor(near) == pytest.approx(ENGINE_KNEE_LIFT * 0.54)
    assert factor(under) == pytest.approx(over)  # the engine agrees: the measured knee stands
    assert factor(EngineKnee()) == pytest.approx(over)  # no engine evidence: as measured
    # The hours' budget spent past half: no exploration, the measured knee stands.
    assert factor(far, SloBudget(10_000.0, 80.0)) == pytest.approx(over)
    assert factor(far, SloBudget(10_000.0, 300.0)) == pytest.approx(over)
    # The explanation shows the knee as the misses found it beside the plan, so a raise can be read off it.
    shown = _stage(far, slo=slo).explain()
    assert shown["slo_knee"] == round(over, 4) and shown["capacity_factor"] > shown["slo_knee"]
    assert "slo_knee" not in _stage(EngineKnee()).explain()  # no knee found: nothing to show


def test_the_misses_trend_under_the_engines_knee_is_raised_towards_it_the_same_way() -> None:
    slo = SloCapacity()
    for _ in range(int(MIN_WINDOWS)):  # misses rising with load, every bin under the budget: a trend, no knee
        for load, missed in ((0.3, 0.5), (0.36, 1.0), (0.42, 2.0), (0.5, 4.0)):
            slo = slo.observe(load, 1000.0, missed)
    over, held, trend = slo.limits(0.99)
    assert over is None and held is not None and trend is not None and held * (1.0 + EXPLORE) > trend

    def stage(engine: EngineKnee, budget: SloBudget | None = None) -> Capacity:
        return _stage(engine, slo=slo, budget=budget)

    far, near = _saturating(0.9, (0.45, 0.55, 0.65)), _saturating(0.47, (0.25, 0.3, 0.36))
    under = _saturating(0.42, (0.25, 0.3, 0.36))
    near_knee, under_knee = near.knee(None), under.knee(None)
    assert near_knee is not None and trend < ENGINE_KNEE_LIFT * near_knee < trend * (1.0 + EXPLORE)
    assert under_knee is not None and ENGINE_KNEE_LIFT * under_knee < trend
    assert stage(far).factor == pytest.approx(trend * (1.0 + EXPLORE))  # explored past, by the budget's +10%
    assert stage(near).factor == pytest.approx(ENGINE_KNEE_LIFT * 0.47)  # never past 15% past the engine's knee
    assert stage(under).factor == pytest.approx(trend)  # the engine agrees: the trend stands
    assert stage(EngineKnee()).factor == pytest.approx(trend)  # no engine evidence: as fitted
    assert stage(far, SloBudget(10_000.0, 80.0)).factor == pytest.approx(trend)  # budget spent past half
    shown = stage(far).explain()
    assert shown["slo_trend"] == round(trend, 4) and "slo_knee" not in shown
    assert "slo_trend" not in _stage(EngineKnee()).explain()  # no misses: no trend to show


@settings(max_examples=300, deadline=None)
@given(over=st.none() | st.floats(0.02, 100.0), engine=st.none() | st.floats(0.02, 100.0),
       explore=st.floats(-EXPLORE, EXPLORE))
def test_a_measured_knee_moves_only_up_towards_the_engines_and_never_past_the_exploration(
        over: float | None, engine: float | None, explore: float) -> None:
    k = measured_knee(over, engine, explore)
    if over is None:
        assert k is None
        return
    assert k is not None and over <= k <= over * (1.0 + max(0.0, explore)) + 1e-12
    assert k <= max(over, ENGINE_KNEE_LIFT * engine if engine is not None else over)


def test_a_knee_found_on_a_small_fleet_keeps_that_fleets_spare_capacity_at_a_larger_demand() -> None:
    """Decision change Z: the misses of 4 replicas at 0.55 each left 4 × (0.9 − knee) of the engine's steady
    throughput spare; ten times that demand keeps the same spare, so each replica carries more."""
    slo = _missed_at(0.55, ready=4)  # 10% missed on 4 replicas at 0.55 each: a knee
    over = slo.knee(0.99)[0]
    assert over is not None and slo.miss_fleet() == pytest.approx(4.0)
    engine = _saturating(0.9, (0.45, 0.55, 0.65))
    assert engine.knee(None) == pytest.approx(0.9)
    spent = SloBudget(10_000.0, 80.0)  # no exploration: the spread alone

    def factor(offered: float, e: EngineKnee = engine) -> float:
        return _stage(e, slo=slo, budget=spent, offered=offered).factor

    assert factor(4 * over) == pytest.approx(over)  # the demand the knee was found at: the knee
    assert factor(4 * over / 3) == pytest.approx(over)  # a smaller demand keeps the knee
    spare = 4 * (0.9 - over)
    assert factor(40 * over) == pytest.approx(40 * over * 0.9 / (40 * over + spare))
    assert over < factor(40 * over) < factor(400 * over) < 0.9  # hotter with demand, never past the engine's
    assert factor(40 * over, EngineKnee()) == pytest.approx(over)  # no engine evidence: the knee as found
    shown = _stage(engine, slo=slo, budget=spent, offered=40 * over).explain()
    assert shown["miss_fleet"] == 4.0 and shown["slo_knee"] == round(over, 4)


def test_a_knee_found_under_half_the_engines_is_no_knee_and_the_plan_goes_on_without_it() -> None:
    """Decision change AB: misses at a seventh of where the engine's batch saturates came from what the load
    bins cannot tell apart (a traffic gap, a backlog a start left), not from the load a replica carried."""
    engine = _saturating(0.9, (0.45, 0.55, 0.65))

    def found_at(load: float, e: EngineKnee = engine) -> tuple[float, Capacity]:
        slo = _missed_at(load)
        over = slo.knee(0.99)[0]
        assert over is not None
        return over, _stage(e, slo=slo)

    low, refused = found_at(0.13)
    assert low < FOUND_UNDER_ENGINE * 0.9
    assert refused.factor == pytest.approx(_stage(engine).factor)  # as if no knee was found
    assert refused.factor > 3.0 * low
    shown = refused.explain()
    assert shown["slo_knee"] == round(low, 4) and shown["slo_knee_refused"] == 1.0  # shown, marked as ignored
    # No engine evidence: the knee stands (the plan falls from the prior's share to the learner's floor).
    assert found_at(0.13, EngineKnee())[1].factor < _stage(EngineKnee()).factor
    kept, stage = found_at(0.6)  # over half the engine's knee: a knee, explored past by the budget's +10%
    assert kept > FOUND_UNDER_ENGINE * 0.9
    assert stage.factor == pytest.approx(kept * (1.0 + EXPLORE))
    assert "slo_knee_refused" not in stage.explain() and "slo_trend_refused" not in stage.explain()
