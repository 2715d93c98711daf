"""The one test of what stored state may hold as a number (autoscaler/core/numbers.py)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core import CoreState
from autoscaler.core.numbers import finite_number


@pytest.mark.parametrize("x", [0, 1, -2.5, 1e308, 10**300, 2**53 + 1])
def test_finite_ints_and_floats_are_numbers(x: object) -> None:
    assert finite_number(x)


@pytest.mark.parametrize("x", [True, False, None, "1", b"1", [1], {"x": 1}, math.nan, math.inf, -math.inf, 10**400])
def test_bools_strings_containers_and_what_no_float_holds_are_not(x: object) -> None:
    assert not finite_number(x)


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.booleans(), st.text(),
                 st.none()))
def test_a_number_is_exactly_what_converts_to_a_finite_float(x: object) -> None:
    expected = isinstance(x, int | float) and not isinstance(x, bool)
    if expected:
        try:
            expected = math.isfinite(float(x))  # type: ignore[arg-type]
        except OverflowError:
            expected = False
    assert finite_number(x) == expected


@pytest.mark.parametrize("key,row", [
    ("sloCapacity", [[10**400, 1, 1, 0]]), ("sloCapacity", [[3, 1, math.inf, 0]]),
    ("sloBudget", [10**400, 0]), ("engineKnee", {"kvWindows": 10**400}), ("lastGrowth", 10**400),
])
def test_a_stored_number_no_float_holds_is_refused_naming_the_field(key: str, row: object) -> None:
    with pytest.raises(ValueError, match=rf"coreState\.{key}"):
        CoreState.from_dict(json.loads(json.dumps({key: row})))  # as a stored JSON reads back
