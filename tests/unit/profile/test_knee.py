"""The ramp's rate sequence and the knee: a pure function of the stages measured so far."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.profile.knee import RampPlan, find_knee, next_rate


def drive(plan: RampPlan, holds: Callable[[float], bool]) -> list[tuple[float, bool]]:
    stages: list[tuple[float, bool]] = []
    while (r := next_rate(plan, stages)) is not None:
        stages.append((r, holds(r)))
        assert len(stages) < 200
    return stages


@settings(max_examples=300, deadline=None)
@given(st.floats(0.1, 50), st.floats(0.01, 500), st.floats(1.1, 3), st.integers(0, 6), st.floats(0, 0.2))
def test_a_monotone_replica_is_bracketed(start: float, capacity: float, growth: float, refine: int,
                                         tol: float) -> None:
    plan = RampPlan(start, growth, 1000.0, refine, tol)
    stages = drive(plan, lambda r: r <= capacity)
    k = find_knee(stages)
    if start > capacity:
        assert k.rate is None and len(stages) == 1
        return
    assert k.rate is not None and k.rate <= capacity
    assert k.broke_at is not None and k.broke_at > capacity and k.reached
    # the bracket shrinks by half per refinement, down to the tolerance
    bracket = max(growth - 1, 0) / 2**refine
    assert k.broke_at / k.rate - 1 <= max(bracket, tol) + 1e-9
    # ramp stages grow geometrically until the first break
    first_break = next(i for i, (_, ok) in enumerate(stages) if not ok)
    for (a, _), (b, _) in pairwise(stages[: first_break + 1]):
        assert b == pytest.approx(min(1000.0, a * growth))


def test_refinement_bisects_between_last_good_and_first_bad() -> None:
    plan = RampPlan(1.0, 2.0, 100.0, refine_steps=3, tolerance=0.0)
    stages = drive(plan, lambda r: r <= 5.0)
    assert [r for r, _ in stages] == [1.0, 2.0, 4.0, 8.0, 6.0, 5.0, 5.5]
    k = find_knee(stages)
    assert (k.rate, k.broke_at) == (5.0, 5.5)


def test_never_breaking_stops_at_max_rate_as_a_lower_bound() -> None:
    stages = drive(RampPlan(1.0, 2.0, 10.0), lambda r: True)
    assert stages[-1] == (10.0, True)
    k = find_knee(stages)
    assert k.rate == 10.0 and k.broke_at is None and not k.reached


def test_a_hold_above_a_break_does_not_raise_the_knee() -> None:
    k = find_knee([(1.0, True), (2.0, True), (4.0, False), (3.0, False), (3.5, True)])
    assert (k.rate, k.broke_at) == (2.0, 3.0)
    assert next_rate(RampPlan(1.0, 2.0, refine_steps=5, tolerance=0.0),
                     [(1.0, True), (2.0, True), (4.0, False), (3.0, False), (3.5, True)]) == 2.5


def test_breaking_at_the_start_stops_at_once() -> None:
    assert next_rate(RampPlan(1.0), [(1.0, False)]) is None
    assert find_knee([(1.0, False)]).rate is None


@pytest.mark.parametrize("kwargs,why", [
    ({"start_rate": 0}, "start rate"), ({"start_rate": 1, "growth": 1.0}, "growth"),
    ({"start_rate": 5, "max_rate": 1}, "below the start"), ({"start_rate": 1, "refine_steps": -1}, "≥ 0"),
])
def test_bad_plans_say_which_field(kwargs: dict, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        RampPlan(**kwargs)
