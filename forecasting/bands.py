"""Quantile bands from the empirical distribution of past forecast errors.

quantile_q(h) = point(h) + Q_q(errors observed at horizon h), where errors are `actual - forecast`.
With fewer than `MIN_ERROR_SAMPLES` errors we fall back to a normal band around the point forecast whose
width grows like sqrt(h) from the one-step residual spread, inflated because that spread is optimistic.

`empirical_offsets` and `band_pinball` work on one error column. `column_offsets` and `column_pinballs`
give the same numbers for every column of an [n, columns] block at once (predict() needs 4 methods x 1
horizon and 1 method x 6 horizons): one sort per block and quantiles read off the sorted columns by index,
instead of one `np.quantile` (with its own partition and NaN filtering) per column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

MIN_ERROR_SAMPLES = 30
FALLBACK_INFLATION = 1.5


def pinball_loss(actual: np.ndarray, predicted: np.ndarray, quantile: float) -> float:
    """Mean quantile (pinball) loss; lower is better."""
    diff = np.asarray(actual, dtype=float) - np.asarray(predicted, dtype=float)
    return float(np.mean(np.maximum(quantile * diff, (quantile - 1.0) * diff)))


def finite(errors: np.ndarray) -> np.ndarray:
    result: np.ndarray = errors[np.isfinite(errors)]
    return result


def empirical_offsets(errors: np.ndarray, quantiles: Sequence[float]) -> np.ndarray | None:
    """Q_q of the finite errors for each q (monotone in q), or None when there are too few."""
    e = finite(errors)
    if len(e) < MIN_ERROR_SAMPLES:
        return None
    result: np.ndarray = np.quantile(e, quantiles)
    return result


def normal_offsets(sigma_one_step: float, h_steps: float, quantiles: Sequence[float]) -> np.ndarray:
    """Offsets of an inflated normal band whose spread grows like sqrt(h)."""
    sd = max(sigma_one_step, 0.0) * np.sqrt(max(h_steps, 1.0)) * FALLBACK_INFLATION
    unit = NormalDist()
    return np.array([unit.inv_cdf(q) * sd for q in quantiles])


def band_pinball(errors: np.ndarray, quantile: float) -> float | None:
    """Out-of-sample pinball loss of a band calibrated on the older half of `errors` and scored on the
    newer half: how a method would have done, band included. None when there are too few errors."""
    e = finite(errors)
    if len(e) < MIN_ERROR_SAMPLES:
        return None
    half = len(e) // 2
    offset = float(np.quantile(e[:half], quantile))
    return pinball_loss(e[half:], np.full(len(e) - half, offset), quantile)




def _finite_rows(errors: np.ndarray) -> list[tuple[list[int], np.ndarray]]:
    """errors [n, columns] as groups (column indices, rows [len(indices), count]) of each column's finite
    errors in their original order, one group per distinct count (usually one group: full rings)."""
    rows = errors.T
    ok = np.isfinite(rows)
    if ok.all():
        return [(list(range(len(rows))), rows)]
    kept = [row[mask] for row, mask in zip(rows, ok, strict=True)]
    by_count: dict[int, list[int]] = {}
    for c, e in enumerate(kept):
        by_count.setdefault(len(e), []).append(c)
    return [(cols, np.stack([kept[c] for c in cols])) for cols in by_count.values()]


def _sorted_rows(rows: np.ndarray) -> np.ndarray:
    result = rows.copy(order="C")  # sorting along a contiguous axis is several times faster
    result.sort(axis=1)
    return result


def _neighbours(n: int, quantile: float) -> tuple[int, int, float]:
    """Indices of the two order statistics np.quantile (method "linear") interpolates between in a
    sorted sample of n, and the weight of the upper one, computed as numpy computes them."""
    virtual = (n - 1) * quantile
    if virtual >= n - 1:
        return n - 1, n - 1, 0.0
    lo = math.floor(virtual)
    return lo, lo + 1, virtual - lo


def _quantiles_of_sorted(rows: np.ndarray, quantiles: Sequence[float]) -> np.ndarray:
    """[rows, len(quantiles)] float64: np.quantile(row, quantiles) of each sorted row with q a sequence,
    with numpy's arithmetic: the neighbours' difference in the data's dtype, the interpolation in float64."""
    out = np.empty((len(rows), len(quantiles)))
    for j, q in enumerate(quantiles):
        lo, hi, gamma = _neighbours(rows.shape[1], q)
        a, b = rows[:, lo], rows[:, hi]
        diff = (b - a).astype(float)
        out[:, j] = b - diff * (1.0 - gamma) if gamma >= 0.5 else a + diff * gamma
    return out


def _quantile_of_sorted(rows: np.ndarray, quantile: float) -> np.ndarray:
    """[rows]: np.quantile(row, quantile) of each sorted row for a Python float q, with numpy's arithmetic:
    a Python-float q keeps the interpolation in the data's dtype (float32 errors stay float32)."""
    lo, hi, gamma = _neighbours(rows.shape[1], quantile)
    a, b = rows[:, lo], rows[:, hi]
    diff = b - a
    result: np.ndarray = b - diff * (1.0 - gamma) if gamma >= 0.5 else a + diff * gamma
    return result


def column_offsets(errors: np.ndarray, quantiles: Sequence[float]) -> tuple[np.ndarray, list[int]]:
    """`empirical_offsets` of every column of errors [n, columns] in one pass: (offsets [columns,
    len(quantiles)], the columns with too few errors, where empirical_offsets is None and offsets NaN)."""
    groups = _finite_rows(errors)
    if len(groups) == 1 and groups[0][1].shape[1] >= MIN_ERROR_SAMPLES:
        return _quantiles_of_sorted(_sorted_rows(groups[0][1]), quantiles), []
    offsets = np.full((errors.shape[1], len(quantiles)), np.nan)
    short: list[int] = []
    for cols, rows in groups:
        if rows.shape[1] >= MIN_ERROR_SAMPLES:
            offsets[cols] = _quantiles_of_sorted(_sorted_rows(rows), quantiles)
        else:
            short.extend(cols)
    return offsets, sorted(short)


def column_pinballs(errors: np.ndarray, quantile: float) -> list[float | None]:
    """`band_pinball` of every column of errors [n, columns], in one pass."""
    losses: list[float | None] = [None] * errors.shape[1]
    for cols, rows in _finite_rows(errors):
        n = rows.shape[1]
        if n < MIN_ERROR_SAMPLES:
            continue
        half = n // 2
        offsets = _quantile_of_sorted(_sorted_rows(rows[:, :half]), quantile).astype(float)
        diff = rows[:, half:].astype(float, order="C") - offsets[:, None]
        # summed along contiguous rows, so each row gets the same pairwise summation as np.mean of it
        terms = np.maximum(quantile * diff, (quantile - 1.0) * diff)
        means = np.add.reduce(terms, axis=1) / (n - half)
        for c, loss in zip(cols, means.tolist(), strict=True):
            losses[c] = loss
    return losses
