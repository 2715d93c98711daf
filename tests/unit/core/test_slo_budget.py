"""The SLO's error budget over hours: fading, burn, the exploration it allows, and its stored form."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.slo_budget import HALF_LIFE_SECONDS, MIN_JUDGED, RECENT_SHARE, SloBudget


def test_a_window_adds_its_requests_weighted_by_the_share_of_the_rate_window_the_tick_covers() -> None:
    b = SloBudget().observe(0.9, 400.0, 15.0, 60.0)
    assert b.judged == pytest.approx(400.0 * 15.0 / 60.0) and b.missed == pytest.approx(b.judged * 0.1)
    # Histograms over two minutes hold twice the requests: a 15-s tick covers an eighth of them.
    assert SloBudget().observe(0.9, 800.0, 15.0, 120.0).judged == pytest.approx(b.judged)
    assert SloBudget().observe(None, 400.0, 15.0, 60.0) == SloBudget()  # not judged: nothing added
    assert b.observe(0.9, 400.0, 0.0, 60.0) == b and b.observe(0.9, 400.0, math.nan, 60.0) == b
    for nonsense in (0.0, -60.0, math.nan, math.inf):  # no real span: the window's requests, at most
        assert SloBudget().observe(0.9, 400.0, 15.0, nonsense).judged == pytest.approx(400.0)


def test_evidence_halves_over_the_half_life() -> None:
    b = SloBudget(4000.0, 40.0).observe(None, 0.0, HALF_LIFE_SECONDS, 60.0)
    assert b.judged == pytest.approx(2000.0) and b.missed == pytest.approx(20.0)


def test_the_recent_counts_forget_twelve_times_faster_and_speak_after_a_twelfth_of_the_requests() -> None:
    b = SloBudget(4000.0, 40.0, 4000.0, 40.0).observe(None, 0.0, HALF_LIFE_SECONDS * RECENT_SHARE, 60.0)
    assert (b.recent_judged, b.recent_missed) == pytest.approx((2000.0, 20.0))
    assert (b.judged, b.missed) == pytest.approx((4000.0 / 2 ** RECENT_SHARE, 40.0 / 2 ** RECENT_SHARE))
    assert SloBudget(recent_judged=MIN_JUDGED * RECENT_SHARE - 1).recent_burn(0.99) is None
    assert SloBudget(recent_judged=MIN_JUDGED * RECENT_SHARE, recent_missed=1.0).recent_burn(0.99) == pytest.approx(
        100.0 / (MIN_JUDGED * RECENT_SHARE))


def test_after_a_burst_of_misses_the_last_minutes_stop_burning_long_before_the_hours_do() -> None:
    b = SloBudget().observe(0.5, 4000.0, 60.0, 60.0)  # one minute in which half of 4000 requests missed
    assert b.recent_burn(0.99) == b.burn(0.99) == pytest.approx(50.0)
    for _ in range(4 * 60):  # then an hour of 1000 requests a minute, all within the SLO
        b = b.observe(1.0, 1000.0, 15.0, 60.0)
    hours, recent = b.burn(0.99), b.recent_burn(0.99)
    assert hours is not None and recent is not None and recent < 0.5 < 2.0 < hours


def test_burn_speaks_only_after_enough_requests_and_sets_how_far_capacity_may_explore() -> None:
    assert SloBudget(MIN_JUDGED - 1, 100.0).burn(0.99) is None
    assert SloBudget(MIN_JUDGED - 1, 100.0).explore(0.99, 0.1) == 0.1
    assert SloBudget(10_000.0, 100.0).burn(0.99) == pytest.approx(1.0)
    assert SloBudget(10_000.0, 40.0).explore(0.99, 0.1) == 0.1  # under half the budget: explore
    assert SloBudget(10_000.0, 70.0).explore(0.99, 0.1) == 0.0  # within it: hold
    assert SloBudget(10_000.0, 150.0).explore(0.99, 0.1) == -0.1  # over it: back off


def test_stored_form_round_trips_and_bad_rows_name_the_problem() -> None:
    b = SloBudget(1234.5, 6.25, 100.5, 2.25)
    assert SloBudget.from_list(b.to_list()) == b and SloBudget.from_list(None) == SloBudget()
    # an older controller stored the hours' counts alone: the recent ones start empty
    assert SloBudget.from_list([1234.5, 6.25]) == SloBudget(1234.5, 6.25)
    for bad, words in (([1.0], "expected"), ([1.0, 2.0], "missed ≤ judged"), ([True, 0.0], "finite numbers"),
                       ([math.inf, 0.0], "finite numbers"), ("x", "expected"), ([1.0, 0.0, 1.0], "expected"),
                       ([2.0, 1.0, 1.0, 2.0], "missed ≤ judged")):
        with pytest.raises(ValueError, match=words):
            SloBudget.from_list(bad)


@given(st.lists(st.tuples(st.one_of(st.none(), st.floats(-1, 2)), st.floats(-10, 1e7), st.floats(-5, 1e5)),
                max_size=50))
def test_missed_never_exceeds_judged_and_both_stay_finite(steps: list[tuple[float | None, float, float]]) -> None:
    b = SloBudget()
    for attained, requests, seconds in steps:
        b = b.observe(attained, requests, seconds, 60.0)
        assert 0.0 <= b.missed <= b.judged + 1e-9 and math.isfinite(b.judged)
        assert 0.0 <= b.recent_missed <= b.recent_judged + 1e-9 and b.recent_judged <= b.judged + 1e-9
        assert SloBudget.from_list(b.to_list()) is not None
