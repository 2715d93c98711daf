"""forecast-eval's CSV reader (pandas underneath): compressed files, and line numbers that count blank lines."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from forecasting.series import SeriesError, load_series

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
