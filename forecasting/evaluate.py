"""Rolling-origin evaluation: how each method would have done, forecasting through the online API.

Each method starts from the first `history_steps` values (one refit), then walks forward one bucket at a
time: forecast the bucket `horizon` ahead (window="at"), observe the next value, refit on schedule. This
scores exactly what the autoscaler would have used, bands included.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from forecasting.bands import pinball_loss
from forecasting.config import ForecastConfig, Method
from forecasting.online import from_history, observe, predict

DEFAULT_METHODS: tuple[Method, ...] = ("auto", "holt", "seasonal", "seasonal-naive", "last")


@dataclass(frozen=True, slots=True)
class MethodScore:
    method: str
    pinball_loss: float  # mean pinball loss of the `quantile` forecast (value units)
    mape_percent: float | None  # of the point forecast, over non-zero actuals; None if all were zero
    coverage: float  # fraction of actuals at or below the `quantile` forecast
    forecasts: int  # how many forecasts were scored
    quantile: float
    horizon_seconds: float
    chosen: dict[str, int] = field(default_factory=dict)  # model actually used, per forecast


def rolling_origin(
    series: np.ndarray | Sequence[float],
    step_seconds: float,
    horizon_seconds: float,
    quantile: float = 0.9,
    methods: Sequence[Method] = DEFAULT_METHODS,
    history_steps: int | None = None,
    *,
    refit_every_seconds: float = 3600.0,
) -> list[MethodScore]:
    """Score each method on forecasts from every origin after the first `history_steps` values
    (default: half the series). NaN values count as missing: not observed, not scored."""
    y = np.asarray(series, dtype=float)
    if horizon_seconds <= 0:
        raise ValueError(f"horizon_seconds must be > 0, got {horizon_seconds}")
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must be strictly between 0 and 1, got {quantile}")
    h = max(1, round(horizon_seconds / step_seconds))
    history_steps = len(y) // 2 if history_steps is None else history_steps
    if history_steps < 2 or history_steps + h > len(y):
        raise ValueError(
            f"the series has {len(y)} points; history_steps={history_steps} must be >= 2 and leave at least "
            f"one horizon ({h} steps) to score"
        )
    return [
        _score(method, y, step_seconds, h, quantile, history_steps, refit_every_seconds) for method in methods
    ]


def _score(
    method: Method,
    y: np.ndarray,
    step: float,
    h: int,
    quantile: float,
    history_steps: int,
    refit_every: float,
) -> MethodScore:
    defaults = ForecastConfig()
    config = ForecastConfig(
        method=method,
        step_seconds=step,
        history_seconds=max(defaults.history_seconds, history_steps * step),
        refit_every_seconds=refit_every,
        min_history_seconds=min(defaults.min_history_seconds, history_steps * step / 2),
        tracked_horizons_seconds=tuple(sorted({*defaults.tracked_horizons_seconds, h * step})),
    )
    state = from_history(config, y[:history_steps])
    points, uppers, actuals = [], [], []
    chosen: Counter[str] = Counter()
    for origin in range(history_steps - 1, len(y) - h):
        actual = y[origin + h]
        if np.isfinite(actual):
            f = predict(config, state, h * step, (quantile,), window="at")
            points.append(f.point)
            uppers.append(f.quantiles[quantile])
            actuals.append(actual)
            chosen[f.method] += 1
        state = observe(config, state, (origin + 1) * step, float(y[origin + 1]))
    a, p, u = np.array(actuals), np.array(points), np.array(uppers)
    nonzero = a != 0
    mape = (
        float(np.mean(np.abs(a[nonzero] - p[nonzero]) / np.abs(a[nonzero])) * 100) if nonzero.any() else None
    )
    return MethodScore(
        method=method,
        pinball_loss=pinball_loss(a, u, quantile) if len(a) else float("nan"),
        mape_percent=mape,
        coverage=float(np.mean(a <= u)) if len(a) else float("nan"),
        forecasts=len(a),
        quantile=quantile,
        horizon_seconds=h * step,
        chosen=dict(chosen),
    )
