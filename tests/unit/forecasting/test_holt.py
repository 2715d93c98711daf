import numpy as np

from forecasting import fit
from forecasting.holt import HoltParams, filtered_states, fit_holt, one_step_predictions


def test_holt_recovers_a_linear_trend() -> None:
    rng = np.random.default_rng(1)
    y = 5.0 + 2.0 * np.arange(500) + rng.normal(0, 1.0, 500)
    model = fit("holt", y, 60.0)
    expected = 5.0 + 2.0 * np.arange(500, 510)
    assert np.allclose(model.forecast(10), expected, atol=3.0)


def test_holt_without_damping_extrapolates_the_slope() -> None:
    y = 3.0 * np.arange(200.0)
    model = fit_holt(y, damped=False)
    assert model.trend == np.float64(model.trend)
    assert abs(model.trend - 3.0) < 0.05


def test_filtered_states_match_the_textbook_recursion() -> None:
    rng = np.random.default_rng(2)
    y = rng.normal(10, 2, 300)
    p = HoltParams(0.4, 0.2, 0.9)
    x0 = np.array([10.0, 0.0])
    level, trend, predictions = x0[0], x0[1], []
    for v in y:
        pred = level + p.phi * trend
        predictions.append(pred)
        e = v - pred
        level, trend = pred + p.alpha * e, p.phi * trend + p.alpha * p.beta * e
    levels, trends = filtered_states(y, p, x0)
    assert np.allclose(levels[-1], level) and np.allclose(trends[-1], trend)
    assert np.allclose(one_step_predictions(y, p, x0), predictions)


def test_fitted_parameters_stay_within_bounds() -> None:
    y = np.random.default_rng(3).normal(0, 1, 1000).cumsum()
    p = fit_holt(y).params
    assert 0 < p.alpha < 1 and 0 < p.beta < 1 and 0.8 <= p.phi <= 1.0
