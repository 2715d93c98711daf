"""Number flags bounded on both sides, as every policy and scenario number is.

click's `FloatRange` checks only the bounds it is given, and NaN passes every comparison, so `--speed nan`,
`--timeout inf` or `--step nan` reached the code behind the flag (a hang, an `OverflowError`, a traceback).
Every number flag of the command line is a `Number` (finite, within its bounds) or an `IntRange` with both
bounds; `tests/unit/test_cli_flags.py` checks that no flag is left without them.
"""

from __future__ import annotations

import math
from typing import Any

import click

from autoscaler.policy import DAY

PORT = 65535  # the highest TCP port


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
