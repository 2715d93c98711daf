"""Number flags bounded on both sides, as every policy and scenario number is.

click's `FloatRange` checks only the bounds it is given, and NaN passes every comparison, so `--speed nan`,
`--timeout inf` or `--step nan` reached the code behind the flag (a hang, an `OverflowError`, a traceback).
Every number flag of the command line is a `Number` (finite, within its bounds) or an `IntRange` with both
bounds; `tests/unit/test_cli_flags.py` checks that no flag is left without them. The developer scripts under
benchmarks/ (argparse) use `arg_number` and `arg_count`, the same checks; `tests/unit/test_benchmark_flags.py`
walks them.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

import click

from autoscaler.policy import DAY

PORT = 65535  # the highest TCP port
BENCH_WORKERS = 64  # processes a sweep may start on one machine (bench --workers; beyond it, Ray)


class Number(click.FloatRange):
    """A finite float within [lo, hi] (either end open on request)."""

    def __init__(self, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False) -> None:
        super().__init__(lo, hi, min_open=lo_open, max_open=hi_open)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv


def seconds(lo: float = 0.0, hi: float = DAY, *, lo_open: bool = True) -> Number:
    """A duration in seconds, by default > 0 and at most a day."""
    return Number(lo, hi, lo_open=lo_open)


def count(lo: int, hi: int) -> click.IntRange:
    """A whole number within [lo, hi]."""
    return click.IntRange(lo, hi)


def _within(value: float, lo: float, hi: float, lo_open: bool) -> bool:
    return math.isfinite(value) and (lo < value if lo_open else lo <= value) and value <= hi


def arg_number(lo: float, hi: float, *, lo_open: bool = False) -> Callable[[str], float]:
    """An argparse `type`: a finite float within [lo, hi] (or (lo, hi]), refused in one line otherwise."""
    span = f"{'(' if lo_open else '['}{lo:g}, {hi:g}]"

    def number(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number; give one in {span}") from None
        if not _within(value, lo, hi, lo_open):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number in {span}")
        return value

    return number


def arg_count(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse `type`: a whole number within [lo, hi], refused in one line otherwise."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give one in {lo}..{hi}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text!r} is not in {lo}..{hi}")
        return value

    return whole


# The developer scripts' shared flags: sweep processes, and the priors' factor (the bench's priors rows use 0.7
# and 1.3; beyond 0.1..10 a prior leaves every policy bound).
WORKERS = arg_count(1, BENCH_WORKERS)
PRIORS_SCALE = arg_number(0.1, 10.0)
