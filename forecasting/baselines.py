"""Baselines every method must beat: the last value, and the value one season earlier."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def seasonal_naive_lag(h_steps: int | np.ndarray, period_steps: int) -> np.ndarray:
    """How far back the seasonal-naive forecast for h steps ahead looks: the smallest multiple of the
    period that is at least h."""
    h = np.asarray(h_steps)
    result: np.ndarray = period_steps * np.ceil(h / period_steps).astype(int)
    return result


@dataclass(frozen=True, slots=True, eq=False)
class LastValueModel:
    series: np.ndarray
    step_seconds: float = 60.0
    method: str = "last"

    def forecast(self, h_steps: int) -> np.ndarray:
        return np.full(h_steps, float(self.series[-1]))

    def insample_errors(self, h_steps: int) -> np.ndarray:
        result: np.ndarray = self.series[h_steps:] - self.series[:-h_steps]
        return result


@dataclass(frozen=True, slots=True, eq=False)
class SeasonalNaiveModel:
    series: np.ndarray
    period_steps: int
    step_seconds: float = 60.0
    method: str = "seasonal-naive"

    def forecast(self, h_steps: int) -> np.ndarray:
        n = len(self.series)
        h = np.arange(1, h_steps + 1)
        idx = n - 1 + h - seasonal_naive_lag(h, self.period_steps)
        return self.series[np.clip(idx, 0, n - 1)]

    def insample_errors(self, h_steps: int) -> np.ndarray:
        lag = int(seasonal_naive_lag(h_steps, self.period_steps))
        out = np.full(max(0, len(self.series) - h_steps), np.nan)
        if len(self.series) > lag:  # targets from index `lag` on have a value one season back
            out[lag - h_steps :] = self.series[lag:] - self.series[:-lag]
        return out
