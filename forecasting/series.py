"""Load a demand series from CSV: a time column in seconds, then one or more value columns.

Errors are `SeriesError`s that name the file, the line, the column and what to do about it.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np


class SeriesError(ValueError):
    """The CSV cannot be used as a series; the message says where and how to fix it."""


@dataclass(frozen=True, slots=True)
class Series:
    path: Path
    column: str
    start_seconds: float
    step_seconds: float
    values: np.ndarray  # one per step from start_seconds; NaN where the file has no row


def load_series(path: str | Path, column: str | None = None) -> Series:
    """Read `path`; `column` picks a value column (default: the first after the time column).

    Times must be increasing and sit on a regular grid (the median spacing); missing grid points
    become NaN. Values must be finite numbers >= 0."""
    p = Path(path)
    if not p.is_file():
        raise SeriesError(f"{p}: no such file; pass the path of a CSV with a time column and value columns")
    try:
        with p.open(newline="") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError) as exc:
        raise SeriesError(f"{p}: cannot read it as text CSV ({exc})") from exc
    if not rows or len(rows[0]) < 2:
        raise SeriesError(f"{p}:1: expected a header with a time column and at least one value column")
    header = [h.strip() for h in rows[0]]
    value_columns = header[1:]
    name = column if column is not None else value_columns[0]
    if name not in value_columns:
        raise SeriesError(
            f"{p}:1: no column {name!r}; value columns are {', '.join(repr(c) for c in value_columns)}"
        )
    col = header.index(name)
    times: list[float] = []
    values: list[float] = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        t = _number(p, line, header[0], row, 0)
        v = _number(p, line, name, row, col)
        if v < 0:
            raise SeriesError(
                f"{p}:{line}: column {name!r} is {v}; demand must be >= 0 (fix or drop the row)"
            )
        if times and t <= times[-1]:
            raise SeriesError(
                f"{p}:{line}: column {header[0]!r} is {t:g}, not after the previous row's {times[-1]:g}; "
                "sort the file by time and drop duplicate times"
            )
        times.append(t)
        values.append(v)
    if len(times) < 2:
        raise SeriesError(f"{p}: needs at least two data rows, found {len(times)}")
    t_arr = np.array(times)
    step = float(np.median(np.diff(t_arr)))
    index = np.round((t_arr - t_arr[0]) / step).astype(int)
    off_grid = np.abs((t_arr - t_arr[0]) / step - index) > 0.01
    if off_grid.any() or len(np.unique(index)) != len(index):
        line = int(np.argmax(off_grid)) + 2
        raise SeriesError(
            f"{p}:{line}: column {header[0]!r} is {t_arr[line - 2]:g}, off the {step:g}-second grid the "
            "other rows use; resample the file to a regular step"
        )
    grid = np.full(int(index[-1]) + 1, np.nan)
    grid[index] = values
    return Series(p, name, float(t_arr[0]), step, grid)


def _number(path: Path, line: int, column: str, row: list[str], i: int) -> float:
    cell = row[i].strip() if i < len(row) else ""
    try:
        x = float(cell)
    except ValueError:
        shown = repr(cell) if cell else "empty"
        raise SeriesError(
            f"{path}:{line}: column {column!r} is {shown}; expected a number (fix the cell or drop the row)"
        ) from None
    if not math.isfinite(x):
        raise SeriesError(f"{path}:{line}: column {column!r} is {cell!r}; expected a finite number")
    return x
