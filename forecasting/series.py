"""Load a demand series from CSV: a time column in seconds, then one or more value columns (cells
past the header's columns are ignored).

Errors are `SeriesError`s that name the file, the line, the column and what to do about it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

MAX_POINTS = 10_000_000  # steps one series spans, gaps included (80 MB of float64): 19 years at a 60-s step


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
    """Read `path` (compressed `.gz`/`.bz2`/`.xz`/`.zip` too); `column` picks a value column (default: the
    first after the time column).

    Times must be increasing and sit on a regular grid (the median spacing); missing grid points
    become NaN. Values must be finite numbers >= 0."""
    p = Path(path)
    if not p.is_file():
        raise SeriesError(f"{p}: no such file; pass the path of a CSV with a time column and value columns")
    try:
        with warnings.catch_warnings():  # cells beyond the header's columns are ignored, as documented
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            # every cell as written and one row per file line (blank ones too): errors quote cell and line
            df = pd.read_csv(p, dtype=str, keep_default_na=False, skip_blank_lines=False, index_col=False)
    except pd.errors.EmptyDataError:
        df = pd.DataFrame()
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # pandas' parser errors are ValueErrors
        raise SeriesError(f"{p}: cannot read it as text CSV ({exc})") from exc
    header = [str(h).strip() for h in df.columns]
    if len(header) < 2:
        raise SeriesError(f"{p}:1: expected a header with a time column and at least one value column")
    value_columns = header[1:]
    name = column if column is not None else value_columns[0]
    if name not in value_columns:
        raise SeriesError(
            f"{p}:1: no column {name!r}; value columns are {', '.join(repr(c) for c in value_columns)}"
        )
    df.columns = header
    df.index += 2  # the file's line numbers: the header is line 1
    df = df[(df.apply(lambda c: c.str.strip()) != "").any(axis=1)]
    t, v = _numbers(p, df[header[0]]), _numbers(p, df[name])
    if (v < 0).any():
        line = int(v.index[v < 0][0])
        raise SeriesError(
            f"{p}:{line}: column {name!r} is {v[line]}; demand must be >= 0 (fix or drop the row)"
        )
    back = t.diff() <= 0
    if back.any():
        line = int(t.index[back][0])
        raise SeriesError(
            f"{p}:{line}: column {header[0]!r} is {t[line]:g}, not after the previous row's "
            f"{t.shift()[line]:g}; sort the file by time and drop duplicate times"
        )
    if len(t) < 2:
        raise SeriesError(f"{p}: needs at least two data rows, found {len(t)}")
    t_arr = t.to_numpy()
    if not np.isfinite(t_arr[-1] - t_arr[0]):
        raise SeriesError(f"{p}:{int(t.index[-1])}: column {header[0]!r} runs from {t_arr[0]:g} to {t_arr[-1]:g}, "
                          "a span no number holds; the times must be seconds")
    step = float(np.median(np.diff(t_arr)))
    steps = (t_arr - t_arr[0]) / step  # each row's offset in steps, as a float: the span is checked before a cast
    if steps[-1] >= MAX_POINTS - 0.5:
        after = int(np.argmax(np.diff(steps))) + 1  # the row after the widest gap
        gap = steps[after] - steps[after - 1]
        raise SeriesError(
            f"{p}:{int(t.index[after])}: column {header[0]!r} is {t.iloc[after]:g}, {gap:,.0f} steps of {step:g} s "
            f"after the row before it: the series would span {steps[-1] + 1:,.0f} steps, at most "
            f"{MAX_POINTS:,}; drop the rows past the gap or split the file"
        )
    index = np.round(steps).astype(int)
    off_grid = np.abs(steps - index) > 0.01
    if off_grid.any() or len(np.unique(index)) != len(index):
        line = int(t.index[int(np.argmax(off_grid))])
        raise SeriesError(
            f"{p}:{line}: column {header[0]!r} is {t[line]:g}, off the {step:g}-second grid the "
            "other rows use; resample the file to a regular step"
        )
    grid = np.full(int(index[-1]) + 1, np.nan)
    grid[index] = v.to_numpy()
    return Series(p, name, float(t_arr[0]), step, grid)


def _numbers(path: Path, cells: pd.Series) -> pd.Series:
    """A column's cells as floats, indexed by file line; the first that is not a finite number is an error."""
    x = pd.to_numeric(cells.str.strip(), errors="coerce")
    bad = ~np.isfinite(x)
    if bad.any():
        line = int(cells.index[bad][0])
        cell = cells[line].strip()
        what = "expected a finite number" if _is_float(cell) else "expected a number (fix the cell or drop the row)"
        shown = repr(cell) if cell else "empty"
        raise SeriesError(f"{path}:{line}: column {cells.name!r} is {shown}; {what}")
    return x.astype(float)


def _is_float(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
