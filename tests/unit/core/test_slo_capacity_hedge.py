"""Capacity at the SLO (per load bin) and the burst hedge from history, each on its own."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState
from autoscaler.core.engine_knee import EngineKnee
from autoscaler.core.slo_capacity import (
    EPISODE_GAP_SECONDS,
    EXPLORE,
    LOW,
    MAX_WEIGHT,
    MIN_EPISODES,
    MIN_WINDOWS,
    RATIO,
    TREND_REACH,
    TREND_SHARE,
    SloCapacity,
    bin_of,
    lower_edge,
    spread_knee,
)
from autoscaler.core.stages.hedge import DEFAULT_HEADROOM, MIN_BUCKETS, bursting, hedge, rise_quantile
from forecasting import ForecastConfig, new_state, observe

from .helpers import capacity_stage, policy


def _seen(*points: tuple[float, float, float], times: int = 10) -> SloCapacity:
    s = SloCapacity()
    for _ in range(times):
        for load, req, missed in points:
            s = s.observe(load, req, missed)
    return s


def test_the_knee_is_the_lowest_load_whose_pooled_attainment_misses() -> None:
    s = _seen((0.4, 1000, 0), (0.6, 1000, 2), (0.8, 1000, 50), (1.0, 1000, 300))
    over, held = s.knee(0.99)
    assert over == pytest.approx(lower_edge(bin_of(0.8) or 0))
    assert held == pytest.approx(lower_edge((bin_of(0.6) or 0) + 1))
    assert s.per_replica(0.99, 1.0, 0.5, 2.0) == pytest.approx(over)  # measured beats the prior


def test_with_no_miss_seen_it_explores_a_little_above_the_highest_load_that_held() -> None:
    s = _seen((1.2, 1000, 0))
    held = lower_edge((bin_of(1.2) or 0) + 1)
    assert s.per_replica(0.99, 0.8, 0.5, 2.0) == pytest.approx(held * (1 + EXPLORE))
    assert _seen((0.3, 1000, 0)).per_replica(0.99, 0.8, 0.5, 2.0) == 0.8  # low load says nothing new
    assert SloCapacity().per_replica(0.99, 0.8, 0.5, 2.0) == 0.8


def test_a_bin_speaks_only_after_enough_windows_and_old_evidence_fades() -> None:
    few = _seen((0.8, 1000, 500), times=int(MIN_WINDOWS) - 1)
    assert few.knee(0.99) == (None, None)
    s = _seen((0.8, 1000, 500), times=100)
    (_, n, r, m), = s.bins
    assert n == MAX_WEIGHT and m / r == pytest.approx(0.5)
    # Later clean windows at the same load outweigh the old misses.
    for _ in range(200):
        s = s.observe(0.8, 1000, 0)
    assert s.knee(0.99)[0] is None


def test_absurd_points_are_ignored() -> None:
    s = SloCapacity()
    inf = float("inf")
    for load, req, missed in ((float("nan"), 10, 0), (0.0, 10, 0), (1.0, 0, 0), (1.0, 10, 11), (inf, 1, 0),
                              # a histogram's count of inf, or one that pools to inf (fuzz_decide seed 6601)
                              (1.0, inf, inf), (1.0, inf, 0), (1.0, 1e308, 1e308), (1.0, 1e12, 0)):
        assert s.observe(load, req, missed) == s


def _centre(load: float) -> float:
    return lower_edge(bin_of(load) or 0) * math.sqrt(RATIO)


def _rising(loads: list[float], share_at: float, at: float, power: float) -> SloCapacity:
    """Bins whose miss share grows as (load / at) ** power from `share_at`, 10 windows of 2,000 requests."""
    return _seen(*((_centre(x), 2000.0, 2000.0 * share_at * (_centre(x) / at) ** power) for x in loads))


def test_misses_under_the_budget_that_rise_with_load_predict_the_knee_before_any_bin_breaks() -> None:
    loads = [0.30, 0.33, 0.36, 0.39, 0.42]
    s = _rising(loads, 0.001, 0.4, 6.0)  # 0.05% at 0.30 up to 0.13% at 0.42: every bin within 1%
    assert s.knee(0.99)[0] is None
    expect = 0.4 * (TREND_SHARE * 0.01 / 0.001) ** (1 / 6)  # where the share reaches half the budget
    assert s.trend_knee(0.99) == pytest.approx(expect, rel=1e-3)
    # The plan stays under it, however much the prior or the loads seen to hold would allow.
    assert s.per_replica(0.99, 0.8, 0.3, 2.0) == pytest.approx(expect, rel=1e-3)
    held = lower_edge((bin_of(_centre(0.42)) or 0) + 1)  # exploring past what held, while under the trend
    assert held * (1 + EXPLORE) < expect
    assert s.per_replica(0.99, 0.4, 0.3, 2.0) == pytest.approx(held * (1 + EXPLORE))
    assert s.per_replica(0.99, 0.8, 0.6, 2.0) == 0.6  # never under the floor
    # A bin over the knee is measured, and beats any prediction.
    broke = s
    for _ in range(10):
        broke = broke.observe(_centre(0.48), 2000.0, 60.0)
    assert broke.knee(0.99)[0] == pytest.approx(lower_edge(bin_of(0.48) or 0))
    assert broke.per_replica(0.99, 0.8, 0.3, 2.0) == pytest.approx(lower_edge(bin_of(0.48) or 0))


def test_no_trend_without_a_significant_rise_with_load() -> None:
    loads = [0.30, 0.33, 0.36, 0.39, 0.42]
    assert _seen(*((x, 2000.0, 0.0) for x in loads)).trend_knee(0.99) is None  # nothing missed
    assert _seen(*((x, 2000.0, 2.0) for x in loads)).trend_knee(0.99) is None  # misses flat in load
    assert _rising(loads, 0.001, 0.4, -4.0).trend_knee(0.99) is None  # misses falling with load
    assert _rising(loads[:2], 0.001, 0.4, 6.0).trend_knee(0.99) is None  # two bins: too few to fit
    few = _seen(*((_centre(x), 100.0, 0.02 * (x / 0.3) ** 3) for x in loads))
    assert few.trend_knee(0.99) is None  # a handful of missed requests in all: noise
    # A gentle rise that would reach half the budget only far past the loads seen says nothing.
    gentle = _rising(loads, 0.0005, 0.4, 2.0)
    assert gentle.trend_knee(0.99) is None
    assert 0.0005 * (0.42 * TREND_REACH / 0.4) ** 2 < TREND_SHARE * 0.01  # (it is beyond the reach)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0.02, 50), st.floats(1, 1e7), st.floats(0, 1)), max_size=30),
       st.floats(0.5, 0.9999))
def test_the_trend_is_none_or_a_finite_load_under_the_reach(points: list[tuple[float, float, float]],
                                                            quantile: float) -> None:
    s = SloCapacity()
    for load, req, share in points:
        for _ in range(int(MIN_WINDOWS)):
            s = s.observe(load, req, req * share)
    t = s.trend_knee(quantile)
    if t is not None:
        assert math.isfinite(t) and LOW <= t <= max(lower_edge(b[0] + 1) for b in s.bins) * TREND_REACH
    assert 0.5 <= s.per_replica(quantile, 0.8, 0.5, 2.0) <= 2.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 50), st.floats(1, 1e5) | st.floats(1, allow_nan=False), st.floats(0, 1)),
                max_size=40))
def test_round_trips_through_json_and_stays_within_bounds(points: list[tuple[float, float, float]]) -> None:
    s = SloCapacity()
    for load, req, share in points:
        s = s.observe(load, req, req * share)
    back = SloCapacity.from_list(json.loads(json.dumps(s.to_list(), allow_nan=False)))
    assert [b[0] for b in back.bins] == [b[0] for b in s.bins]
    assert 0.5 <= back.per_replica(0.99, 0.8, 0.5, 2.0) <= 2.0


@pytest.mark.parametrize("bad", ["x", [[1, 2]], [[-1, 1, 1, 0]], [[1, 1, 1, 2]], [[1, 0, 1, 0]], [[1.5, 1, 1, 0]],
                                 [[1, float("nan"), 1, 0]]])
def test_unreadable_stored_bins_name_the_problem(bad: object) -> None:
    with pytest.raises(ValueError):
        SloCapacity.from_list(bad)


def test_core_state_keeps_what_capacity_learned_across_a_restart() -> None:
    learned = _seen((0.7, 500, 1)).observe(0.7, 500, 5, ready=12.0)
    state = CoreState(slo_capacity=learned, steady_since=123.0)
    back = CoreState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert back.slo_capacity.to_list() == state.slo_capacity.to_list() and back.steady_since == 123.0
    assert back.slo_capacity.miss_fleet() == pytest.approx(12.0)
    with pytest.raises(ValueError, match="sloCapacity"):
        CoreState.from_dict({**state.to_dict(), "sloCapacity": [[1, 1, 1, 5]]})
    for bad in ([1], [-1, 5], [1, float("nan")], [MAX_WEIGHT + 1, 5], "x"):
        with pytest.raises(ValueError, match="sloMissFleet"):
            CoreState.from_dict({**state.to_dict(), "sloMissFleet": bad})
    older = {k: v for k, v in state.to_dict().items() if k != "sloMissFleet"}  # a state written before Z
    assert CoreState.from_dict(older).slo_capacity.miss_fleet() is None


B05, B07 = 41, 46  # the bins of loads 0.5 and 0.7 (LOW × RATIO**b)


def _one_episode(s: SloCapacity, start: float, load: float = 0.7, windows: int = 12) -> SloCapacity:
    """`windows` missed windows (5% of 1,000 requests) 15 s apart from `start`: one burst's misses."""
    for k in range(windows):
        s = s.observe(load, 1000, 50, ready=8, now=start + 15.0 * k)
    return s


def test_a_bins_misses_are_a_knee_only_once_they_recur_in_a_second_episode() -> None:
    held = SloCapacity()
    for k in range(20):
        held = held.observe(0.5, 1000, 0, ready=8, now=15.0 * k)
    once = _one_episode(held, 1000.0)
    assert bin_of(0.5) == B05 and bin_of(0.7) == B07
    assert once.knee(0.99) == (None, lower_edge(B05 + 1))  # one burst: neither a knee nor a held load
    assert once.episodes == ((B07, 1, 1000.0 + 15.0 * 11),)
    assert once.pending(0.99) == pytest.approx(lower_edge(B07)) and held.pending(0.99) is None
    soon = _one_episode(once, 1000.0 + 15.0 * 11 + EPISODE_GAP_SECONDS - 1.0, windows=1)
    assert soon.knee(0.99)[0] is None  # still the same episode: its windows come less than the gap apart
    again = _one_episode(once, 1000.0 + 15.0 * 11 + EPISODE_GAP_SECONDS + 1.0, windows=1)
    assert again.knee(0.99)[0] == pytest.approx(lower_edge(B07)) and again.pending(0.99) is None
    assert [k for _, k, _ in _one_episode(again, 1e5).episodes] == [MIN_EPISODES]  # counted up to the minimum
    # With no clock each missed window is an episode of its own, as before episodes were kept.
    assert _seen((0.5, 1000, 0), (0.7, 1000, 50)).knee(0.99)[0] == pytest.approx(lower_edge(B07))


def test_one_episodes_misses_still_count_in_the_trend() -> None:
    s = SloCapacity()
    for b, (load, missed) in enumerate(((0.40, 0), (0.45, 1), (0.50, 3), (0.55, 9))):
        for k in range(10):
            s = s.observe(load, 1000, missed, ready=8, now=1e4 * b + 15.0 * k)
    s = _one_episode(s, 1e6, load=0.6)
    assert s.knee(0.99)[0] is None
    # The decision's explanation shows the bin a second episode would make the knee, beside the trend.
    shown = capacity_stage(EngineKnee(), slo=s).explain()
    assert shown["slo_knee_pending"] == round(lower_edge(bin_of(0.6) or 0), 4) and "slo_knee" not in shown
    trend = s.trend_knee(0.99)
    assert trend is not None and trend < 0.6


def test_miss_episodes_survive_a_restart_and_an_older_state_keeps_its_knee() -> None:
    held = SloCapacity()
    for k in range(20):
        held = held.observe(0.5, 1000, 0, ready=8, now=15.0 * k)
    once = _one_episode(held, 1000.0)
    state = CoreState(slo_capacity=once)
    back = CoreState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert back.slo_capacity.episodes == once.episodes and back.slo_capacity.knee(0.99)[0] is None
    older = {k: v for k, v in state.to_dict().items() if k != "sloMissEpisodes"}  # written before AD
    assert CoreState.from_dict(older).slo_capacity.knee(0.99)[0] == pytest.approx(lower_edge(B07))
    for bad in ("x", [[1, 1]], [[1, 0, 5.0]], [[1, MIN_EPISODES + 1, 5.0]], [[1.5, 1, 5.0]], [[-1, 1, 5.0]],
                [[1, 1, float("nan")]]):
        with pytest.raises(ValueError, match="sloMissEpisodes"):
            CoreState.from_dict({**state.to_dict(), "sloMissEpisodes": bad})


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.05, 5), st.floats(1, 1e4), st.floats(0, 1), st.floats(0, 3000)), max_size=60))
def test_keeping_episodes_never_finds_a_knee_the_windows_alone_would_not(
        points: list[tuple[float, float, float, float]]) -> None:
    clocked, unclocked, now = SloCapacity(), SloCapacity(), 0.0
    for load, req, share, dt in points:
        now += dt
        clocked = clocked.observe(load, req, req * share, ready=4, now=now)
        unclocked = unclocked.observe(load, req, req * share, ready=4)
    assert clocked.to_list() == unclocked.to_list()
    assert all(1 <= k <= MIN_EPISODES for _, k, _ in clocked.episodes)
    found, bound = clocked.knee(0.99)[0], unclocked.knee(0.99)[0]
    assert found is None or (bound is not None and found >= bound)
    back = SloCapacity.from_list(clocked.to_list()).with_episodes(json.loads(json.dumps(clocked.episodes_to_list())))
    assert back.episodes == tuple((i, k, round(t, 3)) for i, k, t in clocked.episodes)


def test_the_fleet_the_misses_were_seen_on_is_the_mean_of_the_windows_that_missed_and_fades() -> None:
    s = SloCapacity().observe(0.5, 1000, 0, ready=50)  # no miss: says nothing of where misses happen
    assert s.miss_fleet() is None
    s = s.observe(0.5, 1000, 20, ready=4).observe(0.6, 1000, 30, ready=8)
    assert s.miss_fleet() == pytest.approx(6.0)
    for _ in range(400):  # old windows fade: a fleet that misses at 20 replicas now says 20
        s = s.observe(0.6, 1000, 30, ready=20)
    assert s.miss_windows == MAX_WEIGHT and s.miss_fleet() == pytest.approx(20.0, rel=1e-3)


@settings(max_examples=300, deadline=None)
@given(knee=st.none() | st.floats(0.02, 10.0), fleet=st.none() | st.floats(0.5, 1e4),
       throughput=st.none() | st.floats(0.02, 10.0), offered=st.floats(0.0, 1e5))
def test_a_spread_knee_lies_between_the_knee_and_the_throughput_and_grows_with_demand(
        knee: float | None, fleet: float | None, throughput: float | None, offered: float) -> None:
    k = spread_knee(knee, fleet, throughput, offered)
    if knee is None:
        assert k is None
        return
    assert k is not None and knee <= k <= max(knee, throughput or knee) + 1e-12
    assert spread_knee(knee, fleet, throughput, offered * 2.0) >= k - 1e-12  # type: ignore[operator]
    if fleet is not None and throughput is not None and offered <= knee * fleet:
        assert k == pytest.approx(knee)  # at or under the demand the knee was found at: the knee


# hedge
def test_rise_quantile_sees_jumps_within_the_horizon_and_nothing_in_flat_traffic() -> None:
    flat = np.full(200, 10.0)
    assert rise_quantile(flat, 5, 0.99) == 0.0
    jumps = flat.copy()
    jumps[50:70] = 15.0  # +50% for 20 buckets
    jumps[120:140] = 15.0
    assert 0.3 < (rise_quantile(jumps, 5, 0.99) or 0) <= 0.5  # of the 5-bucket mean: sustained jumps
    assert rise_quantile(jumps, 5, 0.5) == 0.0  # most of the time nothing rises
    assert rise_quantile(flat[:MIN_BUCKETS - 1], 5, 0.99) is None  # too little history


def test_gaps_in_the_traffic_are_no_level_to_rise_from() -> None:
    x = np.full(300, 10.0)
    x[100:130] = 0.0
    assert rise_quantile(x, 5, 0.99) == 0.0


def test_hedge_plans_current_demand_plus_the_historical_rise_only_when_the_queue_says_burst() -> None:
    cfg = ForecastConfig(method="last", step_seconds=60.0, history_seconds=86400.0)
    fc = new_state(cfg)
    for i in range(200):
        fc = observe(cfg, fc, i * 60.0 + 1, 15.0 if 50 <= i % 100 < 70 else 10.0)
    calm = hedge(fc, 60.0, 300.0, 0.99, 10.0, 1.0, None, burst=False)
    assert calm.replicas == 0 and 0.3 < calm.headroom <= 0.5
    on = hedge(fc, 60.0, 300.0, 0.99, 10.0, 1.0, calm.cache, burst=True)
    assert on.replicas == math.ceil(10 * (1 + calm.headroom)) and on.cache == calm.cache
    none = hedge(None, 60.0, 300.0, 0.99, 10.0, 1.0, None, burst=True)
    assert none.headroom == DEFAULT_HEADROOM and none.replicas == 10


def test_bursting_needs_a_queue_per_replica_or_queue_time_over_budget() -> None:
    pol = policy()
    assert not bursting(3.0, 4, None, pol)
    assert bursting(4.0, 4, None, pol)
    assert bursting(0.0, 4, 5.0, pol) and not bursting(0.0, 4, 0.1, pol)


def test_noise_within_half_the_budget_again_is_not_a_knee() -> None:
    near = _seen((0.5, 1000, 12))  # 98.8% against a 99% SLO: noise near the target
    assert near.knee(0.99) == (None, None)  # neither over nor proven to hold
    assert _seen((0.5, 1000, 16)).knee(0.99)[0] == pytest.approx(lower_edge(bin_of(0.5) or 0))  # 98.4%: over


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=8, max_size=300), st.integers(1, 40))
def test_window_statistics_are_exactly_the_sliding_views(values: list[float], k: int) -> None:
    """The hedge's window min/mean/max equal numpy's sliding-window view reductions bit for bit (the
    replays' results must not move for a speed-up)."""
    from autoscaler.core.stages.hedge import _window_max, _window_mean, _window_min

    x = np.asarray(values)
    if k > len(x):
        k = len(x)
    view = np.lib.stride_tricks.sliding_window_view(x, k)
    assert np.array_equal(_window_max(x, k), view.max(axis=1))
    assert np.array_equal(_window_min(x, k), view.min(axis=1))
    assert np.array_equal(_window_mean(x, k), view.mean(axis=1))
