import numpy as np

from forecasting import ForecastConfig, from_history, predict
from forecasting.bands import empirical_offsets, pinball_loss


def test_bands_widen_with_horizon() -> None:
    rng = np.random.default_rng(0)
    y = 500 + rng.normal(0, 5, 3000).cumsum()  # a random walk: uncertainty grows with the horizon
    y = np.maximum(y - y.min() + 10, 0)
    config = ForecastConfig(method="holt", step_seconds=60.0)
    state = from_history(config, y)
    widths = []
    for horizon in (60.0, 900.0, 3600.0):
        f = predict(config, state, horizon, (0.1, 0.9), window="at")
        widths.append(f.quantiles[0.9] - f.quantiles[0.1])
    assert widths[0] < widths[1] < widths[2]


def test_quantile_is_point_plus_empirical_error_quantile() -> None:
    errors = np.arange(100, dtype=float)
    assert np.allclose(empirical_offsets(errors, (0.5, 0.9)), np.quantile(errors, (0.5, 0.9)))


def test_too_few_errors_fall_back() -> None:
    assert empirical_offsets(np.array([1.0, 2.0, np.nan]), (0.9,)) is None


def test_pinball_loss_penalises_under_forecasts_more_at_high_quantiles() -> None:
    assert pinball_loss(np.array([10.0]), np.array([8.0]), 0.9) > pinball_loss(
        np.array([10.0]), np.array([12.0]), 0.9
    )
