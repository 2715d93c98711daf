import numpy as np
import pytest

from forecasting import fit

from .synthetic import daily_series


def test_seasonal_follows_the_daily_shape() -> None:
    y = daily_series(5, 600.0, noise=1.0)
    model = fit("seasonal", y, 600.0)
    t = (len(y) + np.arange(1, 37)) * 600.0
    expected = 100 + 30 * np.sin(2 * np.pi * t / 86400)
    assert np.abs(model.forecast(36) - expected).max() < 5.0


def test_seasonal_naive_repeats_one_period_ago() -> None:
    y = daily_series(3, 600.0)
    model = fit("seasonal-naive", y, 600.0, period_seconds=86400.0)
    assert np.array_equal(model.forecast(6), y[-144 : -144 + 6])


def test_last_repeats_the_last_value() -> None:
    assert np.array_equal(fit("last", np.array([1.0, 2.0, 7.0]), 60.0).forecast(3), [7.0, 7.0, 7.0])


def test_auto_prefers_the_seasonal_model_on_seasonal_data() -> None:
    y = daily_series(5, 600.0, noise=2.0)
    assert fit("auto", y, 600.0, horizon_steps=6).method == "seasonal"


def test_seasonal_without_a_season_says_what_to_do() -> None:
    with pytest.raises(ValueError, match="period_seconds"):
        fit("seasonal", np.random.default_rng(0).normal(10, 1, 500), 60.0)


def test_unknown_method_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        fit("arima", np.ones(10), 60.0)
