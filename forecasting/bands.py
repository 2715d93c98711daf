"""Quantile bands from the empirical distribution of past forecast errors.

quantile_q(h) = point(h) + Q_q(errors observed at horizon h), where errors are `actual - forecast`.
With fewer than `MIN_ERROR_SAMPLES` errors we fall back to a normal band around the point forecast whose
width grows like sqrt(h) from the one-step residual spread, inflated because that spread is optimistic.
"""

from __future__ import annotations

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
