"""Demand forecasting for the autoscaler: Holt and seasonal models on scipy, with empirical bands.

Online (pure, for the decision core): `new_state`, `observe`, `predict` with a `ForecastConfig`.
Batch: `fit(method, series, step_seconds).forecast(h_steps)`, `detect_period`, and
`forecasting.evaluate.rolling_origin` for backtests.
"""

from forecasting.config import ForecastConfig
from forecasting.fit import FittedModel, fit
from forecasting.online import Forecast, from_history, new_state, observe, predict
from forecasting.period import detect_period
from forecasting.state import ForecastState

__all__ = [
    "FittedModel",
    "Forecast",
    "ForecastConfig",
    "ForecastState",
    "detect_period",
    "fit",
    "from_history",
    "new_state",
    "observe",
    "predict",
]
