"""Predictive: replicas for the forecast demand (at the policy's quantile) one high-quantile cold start ahead.

The forecaster is fed the offered work every tick. Its forecast changes only when a bucket closes, so
ticks inside one bucket reuse the cached value instead of paying for predict() again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoscaler.core.forecast_seed import ForecastSeed
from autoscaler.core.stages.sizing import replicas_for
from autoscaler.policy import PolicySpec
from forecasting import ForecastConfig, ForecastState, new_state, observe, predict

ForecastCache = tuple[int, int, float, float]  # (bucket index, horizon in buckets, quantile, forecast)
# The forecast never looks further ahead than a day: a cold start that long is a broken prior, and a longer
# horizon only costs memory in predict().
MAX_HORIZON_SECONDS = 86400.0


@dataclass(frozen=True, slots=True)
class Predictive:
    replicas: int
    forecast_work: float | None
    forecast: ForecastState | None
    cache: ForecastCache | None

    def explain(self) -> dict[str, float]:
        return {"predictive": self.replicas}


def forecaster(forecast: ForecastState | None, step_seconds: float | None, seed: ForecastSeed | None,
               config: ForecastConfig) -> ForecastState:
    """The forecaster to continue from: restored history, or the current one re-bucketed after the
    policy changed its step, or a fresh one."""
    if forecast is not None and step_seconds is not None:
        seed = ForecastSeed.of(forecast, step_seconds)
    return seed.rebuild(config) if seed is not None else new_state(config)


def predictive(policy: PolicySpec, config: ForecastConfig, forecast: ForecastState | None,
               step_seconds: float | None, seed: ForecastSeed | None, cache: ForecastCache | None,
               now: float, offered: float, usable: float, horizon_seconds: float) -> Predictive:
    if not policy.forecast.enabled:
        return Predictive(0, None, forecast, cache)
    if forecast is None or step_seconds != config.step_seconds:
        forecast = forecaster(forecast, step_seconds, seed, config)
    forecast = observe(config, forecast, now, offered)
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
