"""forecast-eval's CSV reader (pandas underneath): compressed files, and line numbers that count blank lines."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forecasting.series import MAX_POINTS, SeriesError, load_series

BODY = "t,rps,tps\n0,1,10\n60,2,20\n\n120,3,30\n240,5,50\n"


def test_a_gzipped_csv_reads_like_the_plain_one(tmp_path: Path) -> None:
    plain, packed = tmp_path / "s.csv", tmp_path / "s.csv.gz"
    plain.write_text(BODY)
    packed.write_bytes(gzip.compress(BODY.encode()))
    for column in ("rps", "tps"):
        a, b = load_series(plain, column), load_series(packed, column)
        assert (a.start_seconds, a.step_seconds) == (b.start_seconds, b.step_seconds) == (0.0, 60.0)
        np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(load_series(packed).values, [1.0, 2.0, 3.0, np.nan, 5.0])


def test_errors_name_the_file_line_even_after_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text("t,rps\n0,1\n\n60,2\n\n120,3\n190,4\n")  # 190 is off the 60-s grid, on line 7
    with pytest.raises(SeriesError, match=r"s\.csv:7: column 't' is 190, off the 60-second grid"):
        load_series(p)
    p.write_text("t,rps\n0,1\n\n60,x\n")
    with pytest.raises(SeriesError, match=r"s\.csv:4: column 'rps' is 'x'; expected a number"):
        load_series(p)


def test_an_empty_file_asks_for_a_header(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text("")
    with pytest.raises(SeriesError, match=r"s\.csv:1: expected a header"):
        load_series(p)


def test_a_far_off_time_is_named_not_allocated(tmp_path: Path) -> None:
    # One row 10¹³ steps past the others once asked numpy for 72.8 TiB (forecast-eval --series).
    p = tmp_path / "s.csv"
    p.write_text("t,rps\n" + "".join(f"{60 * i},{i}\n" for i in range(100)) + f"{60 * 10**13},5\n")
    with pytest.raises(SeriesError, match=r"s\.csv:102: column 't' is 6e\+14, 9,999,999,999,901 steps of 60 s"):
        load_series(p)


CELLS = st.one_of(
    st.integers(-5, 10**6).map(str),
    st.sampled_from(["", " ", "nan", "inf", "-inf", "1e308", "-0", "1e-300", "0x10", "1_000", "x", '"3"', "1e400",
                     "\x00", "é", "60.000000001", str(60 * 10**13)]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(CELLS, CELLS), max_size=40), st.booleans(),
       st.tuples(CELLS | st.integers(0, 10**15).map(lambda k: str(60 * k)), CELLS),
       st.sampled_from(["\n", "\r\n"]))
def test_a_mangled_series_loads_finite_and_bounded_or_names_the_file(tmp_path: Path, rows: list[tuple[str, str]],
                                                                    grid: bool, last: tuple[str, str],
                                                                    end: str) -> None:
    # On a grid, every row but the last is a good one: the last may hold anything (a time far past the others too).
    p = tmp_path / "s.csv"
    body = [f"{60 * i},{i}" if grid else f"{t},{v}" for i, (t, v) in enumerate(rows)] + [",".join(last)]
    p.write_text(end.join(["t,rps", *body]) + end, encoding="utf-8")
    try:
        s = load_series(p)
    except SeriesError as e:
        assert str(e).startswith(str(p)) and "\n" not in str(e)
        return
    assert math.isfinite(s.start_seconds) and math.isfinite(s.step_seconds) and s.step_seconds > 0
    assert len(s.values) <= MAX_POINTS
    known = s.values[~np.isnan(s.values)]
    assert len(known) >= 2 and (known >= 0).all() and np.isfinite(known).all()
