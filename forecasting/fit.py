"""Batch API: fit a named method to a whole series and forecast from its end."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from forecasting.bands import band_pinball
from forecasting.baselines import LastValueModel, SeasonalNaiveModel
from forecasting.holt import fit_holt
from forecasting.period import DEFAULT_CANDIDATES_SECONDS, detect_period
from forecasting.seasonal import fit_seasonal

METHODS = ("auto", "holt", "seasonal", "last", "seasonal-naive")
AUTO_CANDIDATES = ("seasonal", "holt", "last", "seasonal-naive")
AUTO_SCORED_TARGETS = 512


class FittedModel(Protocol):
    @property
    def method(self) -> str: ...

    @property
    def step_seconds(self) -> float: ...

    def forecast(self, h_steps: int) -> np.ndarray:
        """Point forecasts for the next `h_steps` buckets after the end of the fitted series."""
        ...

    def insample_errors(self, h_steps: int) -> np.ndarray:
        """actual - forecast of h-step-ahead forecasts from origins inside the series (element i is the
        error at target i + h_steps; NaN where the method had no forecast)."""
        ...


def fit(
    method: str,
    series: np.ndarray,
    step_seconds: float,
    *,
    period_seconds: float | None = None,
    start_index: int = 0,
    damped: bool = True,
    horizon_steps: int = 1,
    quantile: float = 0.9,
    candidates_seconds: tuple[float, ...] = DEFAULT_CANDIDATES_SECONDS,
) -> FittedModel:
    """Fit `method` to `series` (one value per `step_seconds` bucket, oldest first).

    `period_seconds` declares the season (otherwise it is detected; `seasonal` then needs a detectable
    one, `seasonal-naive` falls back to the first candidate that fits in the series). `auto` fits every
    candidate and keeps the one whose band scores the lowest pinball loss at `horizon_steps`/`quantile`
    over the newest forecasts it would have made.
    """
    y = np.asarray(series, dtype=float)
    if y.ndim != 1 or len(y) == 0 or not np.isfinite(y).all():
        raise ValueError("series must be a non-empty 1-D array of finite numbers")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if method == "last":
        return LastValueModel(y, step_seconds)
    if method == "holt":
        return fit_holt(y, damped=damped, step_seconds=step_seconds)
    period = (
        period_seconds if period_seconds is not None else detect_period(y, step_seconds, candidates_seconds)
    )
    if method == "seasonal":
        if period is None:
            raise ValueError("no season detected in the series; declare period_seconds or use 'holt'")
        p = round(period / step_seconds)
        return fit_seasonal(y, p, start_index=start_index, damped=damped, step_seconds=step_seconds)
    if method == "seasonal-naive":
        if period is None:
            period = next((c for c in candidates_seconds if c / step_seconds < len(y)), step_seconds)
        return SeasonalNaiveModel(y, max(1, round(period / step_seconds)), step_seconds)
    return _fit_auto(y, step_seconds, period, start_index, damped, horizon_steps, quantile)


def _fit_auto(
    y: np.ndarray,
    step_seconds: float,
    period: float | None,
    start_index: int,
    damped: bool,
    horizon_steps: int,
    quantile: float,
) -> FittedModel:
    models: list[FittedModel] = [
        fit_holt(y, damped=damped, step_seconds=step_seconds),
        LastValueModel(y, step_seconds),
    ]
    if period is not None:
        p = round(period / step_seconds)
        models.append(SeasonalNaiveModel(y, p, step_seconds))
        if len(y) >= 2 * p:
            models.append(
                fit_seasonal(y, p, start_index=start_index, damped=damped, step_seconds=step_seconds)
            )
    best: FittedModel = models[0]
    best_loss = float("inf")
    for model in models:
        loss = band_pinball(model.insample_errors(horizon_steps)[-AUTO_SCORED_TARGETS:], quantile)
        if loss is not None and loss < best_loss:
            best, best_loss = model, loss
    return best
