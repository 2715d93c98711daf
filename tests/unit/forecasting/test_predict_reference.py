"""predict() must give the same numbers and the same method as the original, np.quantile-based path.

`_reference_predict` below is the implementation predict() had before its quantiles were vectorised
(one `np.quantile` per method and tracked horizon, each after filtering non-finite errors). It is kept
here, self-contained, so any later speed-up is checked against it on seeded states: full rings, partly
filled rings (warm-up), rings with NaN/inf holes of different sizes per column, constant series (ties
between methods), every method and window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
import pytest

from forecasting import ForecastConfig, ForecastState, from_history, observe, predict
from forecasting.bands import FALLBACK_INFLATION, band_pinball, empirical_offsets, normal_offsets
from forecasting.baselines import seasonal_naive_lag
from forecasting.holt import trend_multipliers
from forecasting.online import (
    _EPS,
    AUTO_PREFERENCE,
    FALLBACK,
    HOLT,
    LAST,
    SEASONAL,
    SNAIVE,
    WIDE_BAND_RELATIVE,
    _close_bucket,
    _fits,
    _holt_step,
    _layout,
    _snaive_lags,
    _trend_weights,
)
from forecasting.state import MODEL_METHODS, SeasonalState, frozen

from .synthetic import daily_series

# --- the reference: predict() as it was, one np.quantile per column -----------------------------------


def _ref_available(s: ForecastState) -> dict[int, bool]:
    fitted = s.last_refit_index is not None
    return {
        HOLT: s.holt is not None,
        SEASONAL: s.seasonal is not None,
        LAST: fitted,
        SNAIVE: fitted and s.period_steps is not None,
    }


def _ref_horizons(config: ForecastConfig) -> np.ndarray:
    return np.array(config.tracked_horizon_steps, dtype=int)


def _ref_choose(config: ForecastConfig, s: ForecastState, k: int, q: float) -> int | None:
    available = _ref_available(s)
    if config.method != "auto":
        return next((m for m in FALLBACK[config.method] if available[m]), None)
    hs = _ref_horizons(config)
    hi = min(int(np.searchsorted(hs, k)), len(hs) - 1)
    best, best_loss = None, math.inf
    for m in AUTO_PREFERENCE:
        if not available[m]:
            continue
        loss = band_pinball(s.errors[:, m, hi], q)
        if best is None or (loss is not None and loss < best_loss):
            best, best_loss = m, (loss if loss is not None else math.inf)
    return best


def _ref_point_path(s: ForecastState, m: int, steps: np.ndarray) -> np.ndarray:
    origin = s.history.end_index - 1
    if m == HOLT and s.holt is not None:
        result: np.ndarray = s.holt.level + s.holt.trend * trend_multipliers(s.holt.phi, steps)
        return result
    if m == SEASONAL and s.seasonal is not None:
        h = s.seasonal.holt
        profile = np.asarray(s.seasonal.profile)
        result = h.level + h.trend * trend_multipliers(h.phi, steps) + profile[(origin + steps) % len(profile)]
        return result
    if m == SNAIVE and s.period_steps is not None:
        lags = seasonal_naive_lag(steps, s.period_steps)
        return np.array([s.history.get(int(origin + h - lag)) for h, lag in zip(steps, lags, strict=True)])
    return np.full(len(steps), s.history.last())


def _ref_sigma(s: ForecastState, m: int) -> float:
    if m == HOLT and s.holt is not None:
        return s.holt.sigma
    if m == SEASONAL and s.seasonal is not None:
        return s.seasonal.holt.sigma
    recent = s.history.to_array()[-512:]
    return float(np.std(np.diff(recent))) if len(recent) > 2 else 0.0


def _ref_offsets(
    config: ForecastConfig, s: ForecastState, m: int, steps: np.ndarray, qs: Sequence[float]
) -> np.ndarray:
    hs = _ref_horizons(config)
    sigma = _ref_sigma(s, m)
    recent = s.history.to_array()[-max(1, round(3600 / config.step_seconds)) :]
    sd = max(float(np.std(recent)), WIDE_BAND_RELATIVE * abs(s.history.last()))
    no_model = normal_offsets(sd, 1, qs)  # decision U: a band not yet checked is no narrower than this
    table = np.empty((len(hs), len(qs)))
    for i, h in enumerate(hs):
        emp = empirical_offsets(s.errors[:, m, i], qs)
        table[i] = emp if emp is not None else np.maximum(normal_offsets(sigma, float(h), qs), no_model)
    out = np.empty((len(steps), len(qs)))
    for j in range(len(qs)):
        out[:, j] = np.interp(steps, hs, table[:, j])
    beyond = steps > hs[-1]
    if beyond.any():
        out[beyond] = table[-1] * np.sqrt(steps[beyond] / hs[-1])[:, None]
    return out


def _reference_predict(
    config: ForecastConfig,
    state: ForecastState,
    horizon_seconds: float,
    quantiles: Sequence[float],
    window: Literal["max", "at"] = "max",
) -> tuple[float, dict[float, float], str]:
    qs = tuple(float(q) for q in quantiles)
    if state.bucket_index is None or state.bucket_count == 0:
        return 0.0, dict.fromkeys(qs, 0.0), "last"
    assert _fits(config, state)
    s = _close_bucket(config, state, state.bucket_sum / state.bucket_count, record_errors=False)
    origin = s.history.end_index - 1
    target = math.floor((state.last_t_seconds + horizon_seconds) / config.step_seconds + _EPS)
    k = max(1, target - origin)
    steps = np.arange(1, k + 1) if window == "max" else np.array([k])
    order = np.argsort(qs)
    sorted_qs = [qs[i] for i in order]
    chosen = _ref_choose(config, s, k, max(qs))
    if chosen is None:
        point = s.history.last()
        recent = s.history.to_array()[-max(1, round(3600 / config.step_seconds)) :]
        sd = max(float(np.std(recent)), WIDE_BAND_RELATIVE * abs(point)) * FALLBACK_INFLATION
        paths = np.full(len(steps), point)
        offsets = np.tile(normal_offsets(sd / FALLBACK_INFLATION, 1, sorted_qs), (len(steps), 1))
        name = "last"
    else:
        paths = _ref_point_path(s, chosen, steps)
        offsets = _ref_offsets(config, s, chosen, steps, sorted_qs)
        name = MODEL_METHODS[chosen]
    values = np.nan_to_num(paths[:, None] + offsets, nan=0.0, posinf=0.0, neginf=0.0).clip(min=0.0)
    point_value = float(np.nan_to_num(paths, nan=0.0, posinf=0.0, neginf=0.0).clip(min=0.0).max())
    per_q = np.maximum.accumulate(values.max(axis=0))
    result = {sorted_qs[i]: float(per_q[i]) for i in range(len(sorted_qs))}
    return point_value, {q: result[q] for q in qs}, name


def _reference_close_bucket(
    config: ForecastConfig, s: ForecastState, y: float, *, record_errors: bool
) -> ForecastState:
    """_close_bucket as it was before its rings were rebuilt with np.concatenate."""
    j = s.history.end_index
    layout = _layout(config)
    hs = layout.horizons
    errors = s.errors
    holt, seasonal = s.holt, s.seasonal
    if record_errors and s.last_refit_index is not None:
        row = np.full((len(MODEL_METHODS), len(hs)), np.nan)
        origins = s.past[-hs]
        row[LAST] = y - origins[:, 0]
        if holt is not None:
            row[HOLT] = y - (origins[:, 1] + origins[:, 2] * _trend_weights(holt.phi, layout.horizons_key))
        if seasonal is not None:
            f = origins[:, 3] + origins[:, 4] * _trend_weights(seasonal.holt.phi, layout.horizons_key)
            row[SEASONAL] = y - (f + seasonal.profile[j % seasonal.period_steps])
        if s.period_steps is not None:
            lags = _snaive_lags(s.period_steps, layout.horizons_key)
            if len(lags) == 1:
                row[SNAIVE] = y - s.history.get(j - lags[0])
            else:
                row[SNAIVE] = [y - s.history.get(j - lag) for lag in lags]
        new_errors = np.empty_like(errors)
        new_errors[:-1] = errors[1:]
        new_errors[-1] = row
        errors = frozen(new_errors)
    past = np.empty_like(s.past)
    past[:-1] = s.past[1:]
    past[-1] = np.nan
    past[-1, 0] = y
    if holt is not None:
        holt = _holt_step(holt, y)
        past[-1, 1:3] = holt.level, holt.trend
    if seasonal is not None:
        sh = _holt_step(seasonal.holt, y - seasonal.profile[j % seasonal.period_steps])
        seasonal = SeasonalState(seasonal.period_steps, seasonal.profile, sh)
        past[-1, 3:5] = sh.level, sh.trend
    return ForecastState(
        s.history.append(y),
        s.bucket_index,
        s.bucket_sum,
        s.bucket_count,
        s.last_t_seconds,
        s.last_refit_index,
        s.period_steps,
        holt,
        seasonal,
        frozen(past),
        errors,
    )


# --- seeded states -------------------------------------------------------------------------------------


def _minute_demand(days: float, seed: int) -> np.ndarray:
    """Per-minute demand with daily and weekly cycles, a slow trend and noise (as in the benchmark)."""
    rng = np.random.default_rng(seed)
    n = int(days * 1440)
    t = np.arange(n) * 60.0
    weekend = np.where((t // 86400) % 7 >= 5, -200, 0)
    return np.maximum(0, 1000 + 300 * np.sin(2 * np.pi * t / 86400) + weekend + 0.001 * t / 60 + rng.normal(0, 40, n))


def _with_holes(state: ForecastState, seed: int) -> ForecastState:
    """The same state with NaN/inf punched into the error rings, a different number per column: some
    columns keep plenty of errors, some land just around MIN_ERROR_SAMPLES, some lose all."""
    rng = np.random.default_rng(seed)
    errors = np.array(state.errors)
    r, n_methods, n_horizons = errors.shape
    for m in range(n_methods):
        for i in range(n_horizons):
            keep = int(rng.choice([r, r - 1, r - 7, 61, 60, 31, 30, 29, 5, 0]))
            holes = rng.choice(r, size=r - keep, replace=False)
            errors[holes, m, i] = rng.choice([np.nan, np.inf, -np.inf], size=len(holes), p=[0.8, 0.1, 0.1])
    errors.flags.writeable = False
    return replace(state, errors=errors)


def _states() -> list[tuple[str, ForecastConfig, ForecastState]]:
    out: list[tuple[str, ForecastConfig, ForecastState]] = []
    minute = ForecastConfig()
    full = from_history(minute, _minute_demand(14, seed=1)[:-7])
    out.append(("14d-minute", minute, full))
    s = full
    for t_offset, v in ((15.0, 980.0), (75.0, 1010.0), (135.0, 1200.0), (400.0, 990.0)):  # closes + a gap
        s = observe(minute, s, full.last_t_seconds + t_offset, v)
    out.append(("14d-minute-observed", minute, s))
    out.append(("14d-minute-holes", minute, _with_holes(full, seed=2)))
    out.append(("2d-minute", minute, from_history(minute, _minute_demand(2, seed=3))))
    out.append(("2h-minute-warmup", minute, from_history(minute, _minute_demand(2 / 24, seed=4))))
    coarse = ForecastConfig(step_seconds=600.0)
    out.append(("4d-10min", coarse, from_history(coarse, daily_series(4, 600.0, seed=5))))
    out.append(("4d-10min-holes", coarse, _with_holes(from_history(coarse, daily_series(4, 600.0, seed=6)), 7)))
    out.append(("constant", coarse, from_history(coarse, np.full(600, 50.0))))
    small = ForecastConfig(step_seconds=300.0, error_samples=37, tracked_horizons_seconds=(300.0, 1500.0))
    out.append(("odd-ring", small, from_history(small, daily_series(3, 300.0, seed=8))))
    for method in ("holt", "seasonal", "last", "seasonal-naive"):
        config = ForecastConfig(step_seconds=600.0, method=method)
        state = from_history(config, daily_series(5, 600.0, seed=9))
        out.append((method, config, state))
        out.append((f"{method}-holes", config, _with_holes(state, seed=10)))
        if method == "holt" and state.holt is not None:  # non-finite point paths must still give finite output
            for field, bad in (("level", math.nan), ("trend", math.inf), ("level", -math.inf)):
                broken = replace(state, holt=state.holt._replace(**{field: bad}))
                out.append((f"holt-{field}-{bad}", config, broken))
    return out


STATES = _states()
HORIZONS = (0.0, 30.0, 60.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 5000.0, 7200.0, 10_000.0)
QUANTILES = ((0.9,), (0.5, 0.9), (0.99, 0.1, 0.5), (0.95,), (0.999999,))


def _assert_same(got: tuple[float, dict[float, float], str], want: tuple[float, dict[float, float], str]) -> None:
    assert got[2] == want[2]
    assert got[0] == pytest.approx(want[0], rel=1e-9, abs=1e-9)
    assert list(got[1]) == list(want[1])
    for q in want[1]:
        assert got[1][q] == pytest.approx(want[1][q], rel=1e-9, abs=1e-9), q


@pytest.mark.parametrize(("name", "config", "state"), STATES, ids=[name for name, _, _ in STATES])
@pytest.mark.parametrize("window", ["max", "at"])
def test_predict_matches_the_reference_implementation(
    name: str, config: ForecastConfig, state: ForecastState, window: Literal["max", "at"]
) -> None:
    for horizon in HORIZONS:
        for qs in QUANTILES:
            f = predict(config, state, horizon, qs, window=window)
            got = (f.point, f.quantiles, f.method)
            _assert_same(got, _reference_predict(config, state, horizon, qs, window))


def test_the_seeded_states_exercise_every_method() -> None:
    chosen = {
        _reference_predict(config, state, horizon, (0.9,))[2]
        for _, config, state in STATES
        for horizon in HORIZONS
    }
    assert chosen == set(MODEL_METHODS)


@pytest.mark.parametrize(("name", "config", "state"), STATES, ids=[name for name, _, _ in STATES])
def test_closing_a_bucket_matches_the_reference_exactly(
    name: str, config: ForecastConfig, state: ForecastState
) -> None:
    for y in (0.0, 17.25, 1234.5):
        for record_errors in (True, False):
            got = _close_bucket(config, state, y, record_errors=record_errors)
            want = _reference_close_bucket(config, state, y, record_errors=record_errors)
            assert got.to_dict(significant_digits=None) == want.to_dict(significant_digits=None)  # NaN-safe
            assert np.array_equal(got.errors, want.errors, equal_nan=True)
            assert np.array_equal(got.past, want.past, equal_nan=True)
            assert got.errors.dtype == state.errors.dtype and not got.errors.flags.writeable
            assert not got.past.flags.writeable
