"""Seasonal model: a per-phase seasonal profile plus Holt on the de-seasonalised series.

The profile is the mean, per phase of the cycle, of the series minus its centred one-period moving average
(recent cycles weigh more: weight halves every `profile_half_life_cycles`), centred to zero and lightly
smoothed around the circle. Holt then tracks level and trend of `y - profile[phase]`. Compared with
Holt-Winters this keeps the online update O(1) with a 2-number state (the profile is only re-estimated
at refits) and fits in two cheap steps instead of one large optimisation.

Phases are absolute: bucket index `i` has phase `i % period_steps`, so a model fitted on any window
lines up with wall-clock time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import uniform_filter1d

from forecasting.holt import HoltModel, fit_holt

PROFILE_HALF_LIFE_CYCLES = 4.0


def seasonal_profile(
    y: np.ndarray,
    period_steps: int,
    start_index: int = 0,
    half_life_cycles: float = PROFILE_HALF_LIFE_CYCLES,
) -> np.ndarray:
    """Zero-mean seasonal offsets indexed by absolute phase (`bucket_index % period_steps`)."""
    n = len(y)
    trend = uniform_filter1d(y, size=period_steps, mode="nearest")
    half = period_steps // 2
    if n > 2 * half + 1:  # near the ends the window is not a whole cycle: hold the last full-cycle mean
        trend[:half] = trend[half]
        trend[n - half :] = trend[n - half - 1]
    detrended = y - trend
    phases = (start_index + np.arange(n)) % period_steps
    cycles_ago = (n - 1 - np.arange(n)) // period_steps
    weights = 0.5 ** (cycles_ago / half_life_cycles)
    total = np.bincount(phases, weights=weights * detrended, minlength=period_steps)
    norm = np.bincount(phases, weights=weights, minlength=period_steps)
    profile = np.divide(total, norm, out=np.zeros(period_steps), where=norm > 0)
    width = max(1, period_steps // 96)  # smooth over ~15 minutes of a daily cycle
    if width > 1:
        profile = uniform_filter1d(profile, size=width, mode="wrap")
    result: np.ndarray = profile - profile.mean()
    return result


@dataclass(frozen=True, slots=True, eq=False)
class SeasonalModel:
    period_steps: int
    start_index: int  # absolute bucket index of series[0]
    profile: np.ndarray
    holt: HoltModel  # fitted on series - profile
    series: np.ndarray
    step_seconds: float = 60.0
    method: str = "seasonal"

    @property
    def end_index(self) -> int:
        return self.start_index + len(self.series)

    def forecast(self, h_steps: int) -> np.ndarray:
        phases = (self.end_index + np.arange(h_steps)) % self.period_steps
        result: np.ndarray = self.holt.forecast(h_steps) + self.profile[phases]
        return result

    def insample_errors(self, h_steps: int) -> np.ndarray:
        """Element i is the error at target index i + h_steps (the season cancels out of the residual)."""
        return self.holt.insample_errors(h_steps)


def fit_seasonal(
    y: np.ndarray,
    period_steps: int,
    *,
    start_index: int = 0,
    damped: bool = True,
    step_seconds: float = 60.0,
    holt_start: tuple[float, float, float] | None = None,
) -> SeasonalModel:
    y = np.asarray(y, dtype=float)
    if period_steps < 2 or len(y) < 2 * period_steps:
        raise ValueError(
            f"a seasonal fit needs two full cycles: got {len(y)} points for a {period_steps}-step period"
        )
    profile = seasonal_profile(y, period_steps, start_index)
    residual = y - profile[(start_index + np.arange(len(y))) % period_steps]
    start = None if holt_start is None else tuple(holt_start)
    holt = fit_holt(residual, damped=damped, step_seconds=step_seconds, start=start)  # type: ignore[arg-type]
    return SeasonalModel(period_steps, start_index, profile, holt, y, step_seconds)
