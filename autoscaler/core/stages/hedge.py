"""Burst hedge: headroom sized from the traffic's own history, used once the queue says a burst is real.

How much has demand risen within one cold-start lead time? From the forecaster's closed buckets (their
5-bucket mean: sustained rises, not one noisy bucket), each bucket's rise is the highest demand in the
following lead time over its own; the hedge is the policy's SLO quantile of those rises (the share of
bursts the SLO asks to cover; a higher quantile costs more replicas). Recoveries from gaps in the traffic
are no rises. When the queue says a burst is on (a sequence waiting per ready replica, or the p90 queue
time over the SLO's queue budget), replicas are ordered for the current demand raised by that hedge at
once, instead of chasing the burst one cold start at a time; calm traffic keeps no headroom beyond the
forecast's, so history that never jumps costs nothing. With under MIN_BUCKETS buckets of history the hedge
is DEFAULT_HEADROOM (none: the reactive path sizes for the queue). Recomputed only when a bucket closes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from autoscaler.core.stages.sizing import replicas_for
from autoscaler.policy import PolicySpec
from forecasting import ForecastState

HedgeCache = tuple[int, int, float, float]  # (history end index, horizon in buckets, quantile, headroom)
MIN_BUCKETS = 60  # an hour of 1-minute buckets
DEFAULT_HEADROOM = 0.0  # no history: the forecast quantile alone hedges
MAX_HEADROOM = 1.0  # never plan more than twice the current demand on history alone
MAX_BUCKETS = 10_080  # a week of 1-minute buckets is plenty for a quantile, and bounds the work
SMOOTH_BUCKETS = 5  # rises of the 5-bucket mean: sustained bursts, not one noisy bucket
GAP_SHARE = 0.25  # buckets below this share of the median demand are gaps, not a level to rise from
_MIN_LEVEL = 1e-3  # buckets with (almost) no demand say nothing about relative rises


@dataclass(frozen=True, slots=True)
class Hedge:
    replicas: int
    headroom: float  # share above the current demand planned for
    cache: HedgeCache | None

    def explain(self) -> dict[str, float]:
        return {"hedge": self.replicas, "hedge_headroom": round(self.headroom, 4)}


def rise_quantile(values: np.ndarray, horizon: int, quantile: float) -> float | None:
    """The `quantile` of max(values[t+1..t+horizon]) / values[t] - 1 over t (None: too little history)."""
    x = np.asarray(values, dtype=float)[-MAX_BUCKETS:]
    if horizon < 1 or len(x) < max(MIN_BUCKETS, horizon + SMOOTH_BUCKETS + 2):
        return None
    # A bucket far below the usual level is a gap in the traffic (or in its collection): a recovery from it
    # is no burst, and the reactive path covers a fleet that is awake.
    floor = max(_MIN_LEVEL, GAP_SHARE * float(np.median(x)))
    low = _window_min(x, SMOOTH_BUCKETS) <= floor
    x = _window_mean(x, SMOOTH_BUCKETS)
    ahead = _window_max(x[1:], horizon)
    base = x[: len(ahead)]
    ok = np.isfinite(base) & np.isfinite(ahead) & ~low[: len(ahead)]
    if ok.sum() < MIN_BUCKETS // 2:
        return None
    return float(np.quantile(np.maximum(ahead[ok] / base[ok] - 1.0, 0.0), quantile))


# Sliding-window statistics, exactly what `sliding_window_view(x, k).min/mean/max(axis=1)` give (same
# operations in the same order), without materialising an n × k view: a 14-day replay calls this once per
# closed bucket, and the view made it a quarter of the replay's CPU time.
def _window_min(x: np.ndarray, k: int) -> np.ndarray:
    n = len(x) - k + 1
    m = x[:n]
    for j in range(1, k):
        m = np.minimum(m, x[j:j + n])
    return m


def _window_mean(x: np.ndarray, k: int) -> np.ndarray:
    """Sums in order, as numpy does for fewer than 8 numbers (from 8 on it sums pairwise: use the view)."""
    if k >= 8:
        return np.asarray(np.lib.stride_tricks.sliding_window_view(x, k).mean(axis=1))
    n = len(x) - k + 1
    total = x[:n]
    for j in range(1, k):
        total = total + x[j:j + n]
    return total / k


def _window_max(x: np.ndarray, k: int) -> np.ndarray:
    """max(x[i:i+k]) for every i, in O(n log k): maxima over doubling widths w, then two overlapping
    windows of the largest w ≤ k cover each window of k."""
    n = len(x) - k + 1
    m, w = x, 1
    while 2 * w <= k:
        m = np.maximum(m[:-w], m[w:])
        w *= 2
    return np.maximum(m[:n], m[k - w:k - w + n])


def bursting(waiting: float, ready: int, queue_p90: float | None, policy: PolicySpec) -> bool:
    """The queue says a burst is real: a queue of at least one sequence per ready replica, or the p90
    queue time over the SLO's queue budget."""
    budget = policy.slo.queue_budget_seconds
    return waiting >= max(1, ready) or (queue_p90 is not None and queue_p90 > budget)


def hedge(forecast: ForecastState | None, step_seconds: float, horizon_seconds: float, quantile: float,
          offered: float, usable: float, cache: HedgeCache | None, burst: bool) -> Hedge:
    """Replicas for the current demand raised by the historical rise, once the queue says a burst is on
    (0 replicas otherwise: calm traffic keeps no headroom the forecast does not already plan)."""
    if forecast is None:
        return Hedge(replicas_for(offered * (1 + DEFAULT_HEADROOM), usable) if burst else 0, DEFAULT_HEADROOM,
                     cache)
    horizon = max(1, math.ceil(min(horizon_seconds, 86400.0) / step_seconds)) if horizon_seconds > 0 else 1
    key = (forecast.history.end_index, horizon, quantile)
    if cache is not None and cache[:3] == key:
        headroom = cache[3]
    else:
        rise = rise_quantile(forecast.history.to_array(), horizon, quantile)
        headroom = DEFAULT_HEADROOM if rise is None else min(MAX_HEADROOM, rise)
        cache = (*key, headroom)
    return Hedge(replicas_for(offered * (1 + headroom), usable) if burst else 0, headroom, cache)
