import copy
import json

import numpy as np
import pytest

from forecasting import ForecastConfig, ForecastState, new_state, observe, predict

from .synthetic import daily_series


def test_observe_does_not_change_its_input_state(fitted: tuple[ForecastConfig, ForecastState]) -> None:
    config, state = fitted
    before = copy.deepcopy(state)
    after = observe(config, state, state.last_t_seconds + 600.0, 123.0)
    assert state == before
    assert after != state


def test_state_arrays_are_read_only(fitted: tuple[ForecastConfig, ForecastState]) -> None:
    _, state = fitted
    assert not state.errors.flags.writeable and not state.past.flags.writeable


def test_to_dict_round_trips_exactly_without_rounding(fitted: tuple[ForecastConfig, ForecastState]) -> None:
    _, state = fitted
    assert ForecastState.from_dict(state.to_dict(significant_digits=None)) == state


def test_to_dict_is_json_safe_and_stable_when_rounded(fitted: tuple[ForecastConfig, ForecastState]) -> None:
    config, state = fitted
    data = json.loads(json.dumps(state.to_dict(), allow_nan=False))
    restored = ForecastState.from_dict(data)
    assert restored.to_dict() == data
    a, b = predict(config, state, 3600.0), predict(config, restored, 3600.0)
    assert a.quantiles[0.9] == pytest.approx(b.quantiles[0.9], rel=1e-3)


def test_from_dict_rejects_foreign_data() -> None:
    with pytest.raises(ValueError, match="version"):
        ForecastState.from_dict({"version": 99})


def test_observations_in_one_bucket_are_averaged() -> None:
    config = ForecastConfig(step_seconds=60.0)
    s = new_state(config)
    for t, v in ((0.0, 10.0), (10.0, 20.0), (20.0, 30.0)):
        s = observe(config, s, t, v)
    s = observe(config, s, 60.0, 0.0)
    assert s.history.last() == 20.0


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_non_finite_and_negative_values_are_ignored(bad: float) -> None:
    config = ForecastConfig()
    s = observe(config, new_state(config), 0.0, 5.0)
    assert observe(config, s, 10.0, bad) is s


def test_gaps_are_carried_forward() -> None:
    config = ForecastConfig(step_seconds=60.0)
    s = observe(config, new_state(config), 0.0, 7.0)
    s = observe(config, s, 300.0, 9.0)  # buckets 1..4 missing
    assert [s.history.get(i) for i in range(5)] == [7.0] * 5
    assert s.bucket_index == 5


def test_a_gap_longer_than_the_history_starts_over() -> None:
    config = ForecastConfig(step_seconds=60.0, history_seconds=600.0, min_history_seconds=0.0)
    s = observe(config, new_state(config), 0.0, 7.0)
    s = observe(config, s, 86400.0, 9.0)
    assert len(s.history) == 0 and s.bucket_index == 1440


def test_without_history_it_forecasts_the_last_value_with_a_wide_band() -> None:
    config = ForecastConfig()
    s = observe(config, new_state(config), 0.0, 100.0)
    f = predict(config, s, 600.0)
    assert f.method == "last" and f.point == 100.0
    assert f.quantiles[0.9] >= 125.0


def test_empty_state_predicts_zero() -> None:
    config = ForecastConfig()
    f = predict(config, new_state(config), 60.0)
    assert f.point == 0.0 and f.quantiles == {0.5: 0.0, 0.9: 0.0}


def test_refit_runs_inside_observe_when_due() -> None:
    config = ForecastConfig(step_seconds=600.0, refit_every_seconds=3600.0)
    s = new_state(config)
    for i, v in enumerate(daily_series(0.5, 600.0)):
        s = observe(config, s, i * 600.0, float(v))
    assert s.last_refit_index is not None and s.holt is not None


def test_window_max_is_at_least_the_value_at_the_horizon(
    fitted: tuple[ForecastConfig, ForecastState],
) -> None:
    config, state = fitted
    at = predict(config, state, 7200.0, window="at")
    peak = predict(config, state, 7200.0, window="max")
    assert peak.quantiles[0.9] >= at.quantiles[0.9] and peak.point >= at.point


def test_auto_uses_the_seasonal_model_on_daily_traffic(fitted: tuple[ForecastConfig, ForecastState]) -> None:
    config, state = fitted
    assert predict(config, state, 3600.0).method == "seasonal"


def test_online_errors_are_recorded_when_buckets_close(fitted: tuple[ForecastConfig, ForecastState]) -> None:
    config, state = fitted
    s = observe(config, state, state.last_t_seconds + 600.0, 500.0)
    assert np.isfinite(s.errors[-1]).any()
    assert s.errors[-1, 2, 0] == pytest.approx(state.bucket_sum - state.history.last())


def test_predict_rejects_quantiles_outside_the_unit_interval() -> None:
    config = ForecastConfig()
    with pytest.raises(ValueError, match="quantiles"):
        predict(config, new_state(config), 60.0, (0.5, 1.0))


def test_config_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError, match="extra"):
        ForecastConfig(methd="holt")  # type: ignore[call-arg]


def _smooth_then_fitted(minutes: int) -> tuple[ForecastConfig, ForecastState]:
    """A nearly flat series (one-step spread 0.5 on a level of 100) for `minutes` 1-minute buckets."""
    config = ForecastConfig()
    rng = np.random.default_rng(7)
    s = new_state(config)
    for i in range(minutes + 1):
        s = observe(config, s, i * 60.0, 100.0 + rng.normal(0.0, 0.5))
    return config, s


def test_a_band_its_model_cannot_check_yet_reaches_as_high_as_the_no_history_band() -> None:
    """Decision U: 40 minutes in, the model is fitted but has no errors at a 17-minute horizon (the
    servegen-large-cold lead time). Its one-step spread would give a band of a few percent, which misses any
    ramp; until its own errors say otherwise the band stays as wide as with no model at all."""
    config, s = _smooth_then_fitted(40)
    fitted = predict(config, s, 17 * 60.0)
    assert s.last_refit_index is not None  # fitted at minute 30
    no_history = predict(config, observe(config, new_state(config), 0.0, s.history.last()), 17 * 60.0)
    assert fitted.quantiles[0.9] - fitted.point >= 0.99 * (no_history.quantiles[0.9] - no_history.point)
    assert fitted.quantiles[0.9] >= 1.3 * fitted.point  # 1.28 × 0.25 of the level, inflated by 1.5


def test_once_its_errors_exist_the_band_is_the_measured_one() -> None:
    """After a day of the same flat series the model's own errors at the horizon set the band: far narrower
    than the no-history band, because this series never ramps."""
    config, s = _smooth_then_fitted(1440)
    fitted = predict(config, s, 17 * 60.0)
    assert fitted.quantiles[0.9] < 1.1 * fitted.point
