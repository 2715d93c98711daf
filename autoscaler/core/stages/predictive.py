"""Predictive: replicas for the forecast demand (at the policy's quantile) one high-quantile cold start ahead.

The forecaster is fed the offered work every tick. Its forecast changes only when a bucket closes, so
ticks inside one bucket reuse the cached value instead of paying for predict() again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from autoscaler.core.forecast_seed import ForecastSeed
from autoscaler.core.stages.sizing import replicas_for
from autoscaler.policy import PolicySpec
from forecasting import ForecastConfig, ForecastState, from_history, new_state, observe, predict

ForecastCache = tuple[int, int, float, float]  # (bucket index, horizon in buckets, quantile, forecast)
# The forecast never looks further ahead than a day: a cold start that long is a broken prior, and a longer
# horizon only costs memory in predict().
MAX_HORIZON_SECONDS = 86400.0
# observe() carries the last value over each missing bucket one call at a time (~50 µs each); across a
# longer gap (downtime, a clock jump) the same carried history is rebuilt in one vectorised step instead,
# as after a restart.
MAX_CARRIED_BUCKETS = 500
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Predictive:
    replicas: int
    forecast_work: float | None
    forecast: ForecastState | None
    cache: ForecastCache | None

    def explain(self) -> dict[str, float]:
        return {"predictive": self.replicas}


def forecaster(forecast: ForecastState | None, step_seconds: float | None, seed: ForecastSeed | None,
               config: ForecastConfig, now: float) -> ForecastState:
    """The forecaster to continue from: restored history, or the current one re-bucketed after the
    policy changed its step, or a fresh one; a restored history is carried up to `now` in the same step."""
    if forecast is not None and step_seconds is not None:
        seed = ForecastSeed.of(forecast, step_seconds)
    return seed.carried_to(now, config.history_seconds).rebuild(config) if seed is not None else new_state(config)


def bridge_gap(config: ForecastConfig, forecast: ForecastState, now: float) -> ForecastState:
    """The forecaster as observe() would leave it just before `now` after carrying its last bucket's mean
    over a long gap, built by one from_history() instead of one observe() per missing bucket. Forecast
    error bands restart, as after a restart; gaps longer than the history are left to observe()."""
    if forecast.bucket_index is None or not forecast.bucket_count:
        return forecast
    gap = math.floor(now / config.step_seconds + _EPS) - forecast.bucket_index - 1
    if not MAX_CARRIED_BUCKETS < gap < config.history_steps:
        return forecast
    carried = forecast.bucket_sum / forecast.bucket_count
    values = np.concatenate([forecast.history.to_array(), np.full(gap + 1, carried)])[-config.history_steps:]
    first_index = forecast.bucket_index + gap + 1 - len(values)
    return from_history(config, values, first_index * config.step_seconds)


def predictive(policy: PolicySpec, config: ForecastConfig, forecast: ForecastState | None,
               step_seconds: float | None, seed: ForecastSeed | None, cache: ForecastCache | None,
               now: float, offered: float, usable: float, horizon_seconds: float) -> Predictive:
    if not policy.forecast.enabled:
        return Predictive(0, None, forecast, cache)
    if forecast is None or step_seconds != config.step_seconds:
        forecast = forecaster(forecast, step_seconds, seed, config, now)
    forecast = observe(config, bridge_gap(config, forecast, now), now, offered)
    q = policy.forecast.quantile
    horizon_seconds = horizon_seconds if 0.0 <= horizon_seconds <= MAX_HORIZON_SECONDS else MAX_HORIZON_SECONDS
    key = (int(now // config.step_seconds), math.ceil(horizon_seconds / config.step_seconds), q)
    if cache is not None and cache[:3] == key:
        work = cache[3]
    else:
        fc = predict(config, forecast, horizon_seconds, (q,))
        work = fc.quantiles.get(q, fc.point)
        cache = (*key, work)
    return Predictive(replicas_for(work, usable), work, forecast, cache)
