"""The pure online API the autoscaler's decision core calls: new_state, observe, predict.

No I/O, no clock: time arrives as `t_seconds`, state goes in and a new state comes out.

observe() aggregates observations into `step_seconds` buckets (mean). When a bucket closes it
1. records, for every tracked horizon h and every model, the error of the forecast made h buckets ago,
2. advances each model's level/trend by one error-correction step (O(1)),
3. appends the bucket to the history ring, and
4. refits (period detection, Holt / seasonal parameters, error samples) when `refit_every_seconds` passed.
Missing buckets are carried forward from the last closed bucket (their errors are not recorded); a gap
longer than the whole history restarts from scratch.

predict() forecasts from the open bucket as if it closed now. With `window="max"` (the default) every
number is the maximum over the buckets in (now, now + horizon]: the autoscaler must serve the demand
peak between ordering a replica and that replica becoming ready, not just the demand at the end. With
`window="at"` it is the demand in the bucket containing now + horizon (used for scoring).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

import numpy as np

from forecasting.bands import column_offsets, column_pinballs, normal_offsets
from forecasting.baselines import seasonal_naive_lag
from forecasting.config import ForecastConfig
from forecasting.history import History
from forecasting.holt import HoltModel, HoltParams, fit_holt, trend_multipliers
from forecasting.period import detect_period
from forecasting.seasonal import fit_seasonal
from forecasting.state import MODEL_METHODS, PAST_COLUMNS, ForecastState, HoltState, SeasonalState, frozen

HOLT, SEASONAL, LAST, SNAIVE = range(len(MODEL_METHODS))
AUTO_PREFERENCE = (SEASONAL, HOLT, LAST, SNAIVE)  # tie-break and order of trial
FALLBACK: dict[str, tuple[int, ...]] = {  # what each method degrades to when it cannot be fitted yet
    "holt": (HOLT, LAST),
    "seasonal": (SEASONAL, HOLT, LAST),
    "last": (LAST,),
    "seasonal-naive": (SNAIVE, LAST),
}
WIDE_BAND_RELATIVE = 0.25  # minimum spread of the cold-start band, as a fraction of the last value
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Forecast:
    point: float
    quantiles: dict[float, float]
    method: str
    horizon_seconds: float


@dataclass(frozen=True, slots=True)
class _Layout:
    """Shapes derived from a config, computed once per config (configs are frozen and hashable)."""

    horizons: np.ndarray  # tracked horizons in buckets, ascending
    horizons_key: tuple[int, ...]
    origin_rows: np.ndarray  # -horizons: the rows of `past` holding the forecast origins
    history_steps: int
    past_shape: tuple[int, int]
    errors_shape: tuple[int, int, int]


_LAYOUT_BY_ID: dict[int, tuple[ForecastConfig, _Layout]] = {}


def _layout(config: ForecastConfig) -> _Layout:
    """The config's layout. Looked up by identity first: the caller passes the same config object on every
    call, and hashing a pydantic model (every field) on each observe/predict costs more than the rest of
    a lookup. The entry holds the config, so its id cannot be reused while cached."""
    hit = _LAYOUT_BY_ID.get(id(config))
    if hit is not None and hit[0] is config:
        return hit[1]
    layout = _layout_of(config)
    if len(_LAYOUT_BY_ID) >= 64:
        _LAYOUT_BY_ID.clear()
    _LAYOUT_BY_ID[id(config)] = (config, layout)
    return layout


@lru_cache(maxsize=64)
def _layout_of(config: ForecastConfig) -> _Layout:
    key = config.tracked_horizon_steps
    return _Layout(
        frozen(np.array(key, dtype=int)),
        key,
        frozen(-np.array(key, dtype=int)),
        config.history_steps,
        (key[-1], PAST_COLUMNS),
        (config.error_samples, len(MODEL_METHODS), len(key)),
    )


def _horizons(config: ForecastConfig) -> np.ndarray:
    return _layout(config).horizons


def new_state(config: ForecastConfig) -> ForecastState:
    layout = _layout(config)
    return ForecastState(
        history=History.empty(layout.history_steps, 0),
        bucket_index=None,
        bucket_sum=0.0,
        bucket_count=0,
        last_t_seconds=float("-inf"),
        last_refit_index=None,
        period_steps=None,
        holt=None,
        seasonal=None,
        past=frozen(np.full(layout.past_shape, np.nan)),
        errors=frozen(np.full(layout.errors_shape, np.nan, dtype=np.float32)),
    )


def _fits(config: ForecastConfig, state: ForecastState) -> bool:
    layout = _layout(config)
    return (
        state.history.capacity == layout.history_steps
        and state.past.shape == layout.past_shape
        and state.errors.shape == layout.errors_shape
    )


def observe(config: ForecastConfig, state: ForecastState, t_seconds: float, value: float) -> ForecastState:
    """Feed one observation; returns a new state (the input is unchanged).

    Non-finite or negative values, and observations for an already closed bucket, are ignored."""
    if not (math.isfinite(t_seconds) and math.isfinite(value)) or value < 0:
        return state
    if not _fits(config, state):  # the config changed shape (history, horizons, samples): start over
        state = new_state(config)
    index = math.floor(t_seconds / config.step_seconds + _EPS)
    open_index = state.bucket_index
    if open_index is None:
        s = replace(state, history=History.empty(config.history_steps, index))
        return replace(s, bucket_index=index, bucket_sum=value, bucket_count=1, last_t_seconds=t_seconds)
    if index < open_index:
        return state
    if index == open_index:
        return replace(
            state,
            bucket_sum=state.bucket_sum + value,
            bucket_count=state.bucket_count + 1,
            last_t_seconds=max(state.last_t_seconds, t_seconds),
        )
    s = _close_bucket(config, state, state.bucket_sum / state.bucket_count, record_errors=True)
    missing = index - open_index - 1
    if missing >= _layout(config).history_steps:  # a gap longer than the history: nothing left worth keeping
        s = replace(new_state(config), history=History.empty(config.history_steps, index))
    else:
        carried = s.history.last()
        for _ in range(missing):
            s = _close_bucket(config, s, carried, record_errors=False)
    if _refit_due(config, s):
        s = _refit(config, s)
    return replace(s, bucket_index=index, bucket_sum=value, bucket_count=1, last_t_seconds=t_seconds)


def from_history(
    config: ForecastConfig, values: Sequence[float] | np.ndarray, first_t_seconds: float = 0.0
) -> ForecastState:
    """The state after observing values[i] at first_t_seconds + i*step_seconds, built in one refit
    instead of len(values) observe calls (e.g. to bootstrap from stored metrics). Non-finite or
    negative values are carried forward from the previous bucket."""
    y = np.asarray(values, dtype=float)
    state = new_state(config)
    if len(y) == 0:
        return state
    ok = np.isfinite(y) & (y >= 0)
    if not ok.any():
        return state
    first = int(np.argmax(ok))
    idx = np.where(ok, np.arange(len(y)), 0)
    y = y[np.maximum.accumulate(idx)][first:]  # carry forward over bad values
    start = math.floor(first_t_seconds / config.step_seconds + _EPS) + first
    end = start + len(y) - 1  # the last value stays in the open bucket, as observe would leave it
    s = replace(
        state,
        history=History.from_array(config.history_steps, end, y[:-1]),
        bucket_index=end,
        bucket_sum=float(y[-1]),
        bucket_count=1,
        last_t_seconds=first_t_seconds + (first + len(y) - 1) * config.step_seconds,
    )
    return _refit(config, s) if _refit_due(config, s) else s


def _refit_due(config: ForecastConfig, s: ForecastState) -> bool:
    if len(s.history) * config.step_seconds < config.min_history_seconds or len(s.history) < 4:
        return False
    if s.last_refit_index is None:
        return True
    return (
        s.history.end_index - s.last_refit_index
    ) * config.step_seconds >= config.refit_every_seconds - _EPS


def _close_bucket(
    config: ForecastConfig, s: ForecastState, y: float, *, record_errors: bool
) -> ForecastState:
    j = s.history.end_index  # index of the bucket being closed
    layout = _layout(config)
    hs = layout.horizons
    errors = s.errors
    holt, seasonal = s.holt, s.seasonal
    if record_errors and s.last_refit_index is not None:
        row = np.full((len(MODEL_METHODS), len(hs)), np.nan, dtype=errors.dtype)  # rounded as stored
        origins = s.past[layout.origin_rows]  # value and model states after closing bucket j - h, per h
        row[LAST] = y - origins[:, 0]
        if holt is not None:
            row[HOLT] = y - (origins[:, 1] + origins[:, 2] * _trend_weights(holt.phi, layout.horizons_key))
        if seasonal is not None:
            f = origins[:, 3] + origins[:, 4] * _trend_weights(seasonal.holt.phi, layout.horizons_key)
            row[SEASONAL] = y - (f + seasonal.profile[j % seasonal.period_steps])
        if s.period_steps is not None:
            lags = _snaive_lags(s.period_steps, layout.horizons_key)
            if len(lags) == 1:  # every tracked horizon within one season looks back exactly one season
                row[SNAIVE] = y - s.history.get(j - lags[0])
            else:
                row[SNAIVE] = [y - s.history.get(j - lag) for lag in lags]
        errors = frozen(np.concatenate((errors[1:], row[None])))
    holt, seasonal = _step_models(s, y)
    newest = [y, math.nan, math.nan, math.nan, math.nan]
    if holt is not None:
        newest[1:3] = holt.level, holt.trend
    if seasonal is not None:
        newest[3:5] = seasonal.holt.level, seasonal.holt.trend
    past = np.concatenate((s.past[1:], [newest]))
    return replace(s, history=s.history.append(y), holt=holt, seasonal=seasonal, past=frozen(past), errors=errors)


def _step_models(s: ForecastState, y: float) -> tuple[HoltState | None, SeasonalState | None]:
    """Holt and seasonal states after closing the newest bucket (index s.history.end_index) at value y."""
    holt, seasonal = s.holt, s.seasonal
    if holt is not None:
        holt = _holt_step(holt, y)
    if seasonal is not None:
        phase = s.history.end_index % seasonal.period_steps
        seasonal = SeasonalState(
            seasonal.period_steps, seasonal.profile, _holt_step(seasonal.holt, y - seasonal.profile[phase])
        )
    return holt, seasonal


def _closed_for_forecast(s: ForecastState, y: float) -> ForecastState:
    """What predict() forecasts from: s with its open bucket closed at value y, i.e. history and models as
    `_close_bucket(record_errors=False)` leaves them, but `past` not rolled (predict never reads it)."""
    holt, seasonal = _step_models(s, y)
    return replace(s, history=s.history.append(y), holt=holt, seasonal=seasonal)


@lru_cache(maxsize=256)
def _trend_weights(phi: float, hs: tuple[int, ...]) -> np.ndarray:
    return frozen(trend_multipliers(phi, np.asarray(hs)))


@lru_cache(maxsize=64)
def _snaive_lags(period_steps: int, hs: tuple[int, ...]) -> tuple[int, ...]:
    """Look-back per tracked horizon, or a single look-back when it is the same for all."""
    lags = [int(x) for x in seasonal_naive_lag(np.asarray(hs), period_steps)]
    return tuple(lags) if len(set(lags)) > 1 else (lags[0],)


def _holt_step(h: HoltState, y: float) -> HoltState:
    prediction = h.level + h.phi * h.trend
    e = y - prediction
    return HoltState(
        h.alpha, h.beta, h.phi, prediction + h.alpha * e, h.phi * h.trend + h.alpha * h.beta * e, h.sigma
    )


def _holt_state(m: HoltModel) -> HoltState:
    return HoltState(*m.params, float(m.level), float(m.trend), float(m.sigma))


def _refit(config: ForecastConfig, s: ForecastState) -> ForecastState:
    """Re-estimate the season, model parameters and error samples from the whole history."""
    y = s.history.to_array()
    n, start, step = len(y), s.history.start_index, config.step_seconds
    method = config.method
    period: int | None = None
    if method in ("auto", "seasonal", "seasonal-naive"):
        found = detect_period(y, step, config.season_candidates_seconds)
        period = None if found is None else round(found / step)
        if period is None and method == "seasonal-naive":  # fall back to the declared season
            period = next((round(c / step) for c in config.season_candidates_seconds if c / step < n), None)
    hs = _horizons(config)
    past = np.full_like(s.past, np.nan)
    errors = np.full(s.errors.shape, np.nan, dtype=np.float32)
    keep = min(len(past), n)
    past[-keep:, 0] = y[-keep:]
    r = int(s.errors.shape[0])

    def seed(method_index: int, insample: Callable[[int], np.ndarray]) -> None:
        for k, h in enumerate(hs):
            e = insample(int(h))
            tail = e[-r:]
            if len(tail):
                errors[r - len(tail) :, method_index, k] = tail

    holt_state: HoltState | None = None
    if method in ("auto", "holt") or (method == "seasonal" and period is None):
        start_params = None if s.holt is None else HoltParams(*s.holt[:3])
        hm = fit_holt(y, damped=config.damped, step_seconds=step, start=start_params)
        holt_state = _holt_state(hm)
        past[-keep:, 1], past[-keep:, 2] = hm.levels[-keep:], hm.trends[-keep:]
        seed(HOLT, hm.insample_errors)
    seasonal_state: SeasonalState | None = None
    if method in ("auto", "seasonal") and period is not None and n >= 2 * period:
        start_params = None if s.seasonal is None else HoltParams(*s.seasonal.holt[:3])
        sm = fit_seasonal(
            y, period, start_index=start, damped=config.damped, step_seconds=step, holt_start=start_params
        )
        seasonal_state = SeasonalState(period, tuple(sm.profile.tolist()), _holt_state(sm.holt))
        past[-keep:, 3], past[-keep:, 4] = sm.holt.levels[-keep:], sm.holt.trends[-keep:]
        seed(SEASONAL, sm.insample_errors)
    seed(LAST, lambda h: y[h:] - y[:-h] if n > h else np.empty(0))
    if period is not None:
        lags = {int(h): int(seasonal_naive_lag(int(h), period)) for h in hs}
        seed(SNAIVE, lambda h: _lagged_errors(y, h, lags[h]))
    return replace(
        s,
        last_refit_index=s.history.end_index,
        period_steps=period,
        holt=holt_state,
        seasonal=seasonal_state,
        past=frozen(past),
        errors=frozen(errors),
    )


def _lagged_errors(y: np.ndarray, h: int, lag: int) -> np.ndarray:
    """Errors at targets h..n-1 of forecasting y[t] by y[t - lag] (NaN where that is before the data)."""
    out = np.full(max(0, len(y) - h), np.nan)
    if len(y) > lag:
        out[lag - h :] = y[lag:] - y[:-lag]
    return out


def predict(
    config: ForecastConfig,
    state: ForecastState,
    horizon_seconds: float,
    quantiles: Sequence[float] = (0.5, 0.9),
    *,
    window: Literal["max", "at"] = "max",
) -> Forecast:
    """Demand forecast `horizon_seconds` after the newest observation; never negative, always finite.

    `window="max"` (default): point and quantiles are the maxima over the buckets in (now, now+horizon].
    `window="at"`: values for the bucket containing now+horizon. Quantiles come from the empirical
    errors at that horizon (interpolated between tracked horizons). For `method="auto"` the model is the
    one whose calibrated band had the lowest pinball loss at this horizon and the highest requested q.
    """
    qs = tuple(float(q) for q in quantiles)
    if any(not (0.0 < q < 1.0) for q in qs):
        raise ValueError(f"quantiles must be strictly between 0 and 1, got {list(qs)}")
    if not math.isfinite(horizon_seconds) or horizon_seconds < 0:
        raise ValueError(f"horizon_seconds must be a finite number >= 0, got {horizon_seconds}")
    if state.bucket_index is None or state.bucket_count == 0:
        return Forecast(0.0, dict.fromkeys(qs, 0.0), "last", horizon_seconds)
    if not _fits(config, state):
        raise ValueError(
            "state was built for a different ForecastConfig (history, horizons or error_samples)"
        )
    s = _closed_for_forecast(state, state.bucket_sum / state.bucket_count)
    origin = s.history.end_index - 1
    target = math.floor((state.last_t_seconds + horizon_seconds) / config.step_seconds + _EPS)
    k = max(1, target - origin)
    steps = np.arange(1, k + 1) if window == "max" else np.array([k])
    sorted_qs = sorted(qs)
    chosen = _choose(config, s, k, max(qs))
    if chosen is None:
        paths = np.full(len(steps), s.history.last())
        offsets = np.tile(_no_history_offsets(config, s, sorted_qs), (len(steps), 1))
        name = "last"
    else:
        paths = _point_path(s, chosen, steps)
        offsets = _offsets(config, s, chosen, steps, sorted_qs)
        name = MODEL_METHODS[chosen]
    values = paths[:, None] + offsets
    peaks = values.max(axis=0).tolist()  # max over the window, per quantile
    point_value = float(paths.max())
    if point_value < math.inf and all(v < math.inf for v in peaks):  # no NaN or +inf: just floor at 0
        point_value = max(point_value, 0.0)
        peaks = [max(v, 0.0) for v in peaks]
    else:  # NaN or +inf somewhere: count every non-finite value as 0
        point_value = float(_finite_non_negative(paths).max())
        peaks = _finite_non_negative(values).max(axis=0).tolist()
    result, running = {}, 0.0
    for q, peak in zip(sorted_qs, peaks, strict=True):
        running = max(running, peak)  # monotone in q
        result[q] = running
    return Forecast(point_value, {q: result[q] for q in qs}, name, horizon_seconds)


def _finite_non_negative(x: np.ndarray) -> np.ndarray:
    """x with NaN, +-inf and negatives replaced by 0."""
    result: np.ndarray = np.where((x > 0.0) & (x < math.inf), x, 0.0)
    return result


def _available(s: ForecastState) -> dict[int, bool]:
    fitted = s.last_refit_index is not None
    return {
        HOLT: s.holt is not None,
        SEASONAL: s.seasonal is not None,
        LAST: fitted,
        SNAIVE: fitted and s.period_steps is not None,
    }


def _nearest_horizon(config: ForecastConfig, k: int) -> int:
    """Index of the smallest tracked horizon >= k steps (the largest when k is beyond them all)."""
    hs = _layout(config).horizons_key
    return min(bisect_left(hs, k), len(hs) - 1)


def _choose(config: ForecastConfig, s: ForecastState, k: int, q: float) -> int | None:
    available = _available(s)
    if config.method != "auto":
        return next((m for m in FALLBACK[config.method] if available[m]), None)
    candidates = [m for m in AUTO_PREFERENCE if available[m]]
    if not candidates:
        return None
    hi = _nearest_horizon(config, k)
    # every candidate in one pass; a view rather than a copy when all methods are candidates
    errors = s.errors[:, :, hi] if len(candidates) == len(MODEL_METHODS) else s.errors[:, candidates, hi]
    losses = column_pinballs(errors, q)
    if len(candidates) == len(MODEL_METHODS):
        losses = [losses[m] for m in candidates]
    best, best_loss = None, math.inf
    for m, loss in zip(candidates, losses, strict=True):
        if best is None or (loss is not None and loss < best_loss):
            best, best_loss = m, (loss if loss is not None else math.inf)
    return best


def _point_path(s: ForecastState, m: int, steps: np.ndarray) -> np.ndarray:
    origin = s.history.end_index - 1
    if m == HOLT and s.holt is not None:
        result: np.ndarray = s.holt.level + s.holt.trend * trend_multipliers(s.holt.phi, steps)
        return result
    if m == SEASONAL and s.seasonal is not None:
        h = s.seasonal.holt
        profile = s.seasonal.profile  # a tuple of one value per phase: pick the few needed, not convert all
        phases = ((origin + steps) % len(profile)).tolist()
        result = h.level + h.trend * trend_multipliers(h.phi, steps) + np.array([profile[i] for i in phases])
        return result
    if m == SNAIVE and s.period_steps is not None:
        lags = seasonal_naive_lag(steps, s.period_steps)
        return np.array([s.history.get(int(origin + h - lag)) for h, lag in zip(steps, lags, strict=True)])
    return np.full(len(steps), s.history.last())


def _sigma(s: ForecastState, m: int) -> float:
    if m == HOLT and s.holt is not None:
        return s.holt.sigma
    if m == SEASONAL and s.seasonal is not None:
        return s.seasonal.holt.sigma
    recent = s.history.to_array()[-512:]
    return float(np.std(np.diff(recent))) if len(recent) > 2 else 0.0


def _no_history_offsets(config: ForecastConfig, s: ForecastState, qs: Sequence[float]) -> np.ndarray:
    """Offsets [len(qs)] of the band with no fitted model: normal, its spread the larger of the last hour's
    standard deviation and WIDE_BAND_RELATIVE of the newest value (`normal_offsets` inflates it)."""
    recent = s.history.to_array()[-max(1, round(3600 / config.step_seconds)) :]
    return normal_offsets(max(float(np.std(recent)), WIDE_BAND_RELATIVE * abs(s.history.last())), 1, qs)


def _offsets(
    config: ForecastConfig, s: ForecastState, m: int, steps: np.ndarray, qs: Sequence[float]
) -> np.ndarray:
    """Band offsets [len(steps), len(qs)]: empirical error quantiles at each tracked horizon (where too
    few, a normal band whose upper quantiles reach at least `_no_history_offsets`'), linear in h between
    tracked horizons, growing like sqrt(h) beyond."""
    layout = _layout(config)
    hs = layout.horizons
    table, short = column_offsets(s.errors[:, m, :], qs)  # every tracked horizon at once
    if short:
        # A band the model's own errors cannot check yet reaches no lower above the point than the band with
        # no model at all: the one-step spread grows like sqrt(h) and misses a ramp (docs/benchmarks.md,
        # decision U). Only the upper side is floored (the maximum); every caller asks for q >= 0.5.
        sigma, floor = _sigma(s, m), _no_history_offsets(config, s, qs)
        for i in short:
            table[i] = np.maximum(normal_offsets(sigma, float(hs[i]), qs), floor)
    if len(qs) == 1:
        out = np.interp(steps, hs, table[:, 0])[:, None]
    else:
        out = np.empty((len(steps), len(qs)))
        for j in range(len(qs)):
            out[:, j] = np.interp(steps, hs, table[:, j])
    if int(steps[-1]) > layout.horizons_key[-1]:  # steps ascend: only then can any lie beyond
        beyond = steps > hs[-1]
        out[beyond] = table[-1] * np.sqrt(steps[beyond] / hs[-1])[:, None]
    return out
