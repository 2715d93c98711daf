"""backtest's --start/--end: unix seconds or ISO 8601, both held to 1970..9999 (Prometheus' own range)."""

from __future__ import annotations

import click
import pytest

from autoscaler.cli.backtest import parse_time


@pytest.mark.parametrize(("raw", "unix"), [
    ("1700158500", 1700158500.0),
    ("2023-11-16T18:15:00Z", 1700158500.0),
    ("2023-11-16T19:15:00+01:00", 1700158500.0),
    ("2023-11-16T18:15:00", 1700158500.0),  # no zone: UTC
    ("1970-01-01T00:00:00Z", 0.0),
])
def test_times_in_range(raw: str, unix: float) -> None:
    assert parse_time(raw, "--start") == unix


@pytest.mark.parametrize("raw", [
    "1969-12-31T23:59:59Z",  # an ISO time before 1970 was passed to Prometheus as a negative unix time
    "1970-01-01T00:30:00+01:00",  # 1969 in UTC
    "0001-01-01T00:00:00",
    "-1", "nan", "inf", "1e308",
])
def test_times_out_of_range_are_one_line(raw: str) -> None:
    with pytest.raises(click.BadParameter, match=r"not a time in 1970\.\.9999") as e:
        parse_time(raw, "--start")
    assert "\n" not in e.value.format_message()


def test_neither_number_nor_iso() -> None:
    with pytest.raises(click.BadParameter, match="neither unix seconds nor an ISO time"):
        parse_time("yesterday", "--end")
