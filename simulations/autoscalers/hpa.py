"""`hpa`: the Kubernetes HorizontalPodAutoscaler v2, as shared/docs/autoscaler-anchors.md §(b)1 documents it.

- Sync every 15 s; `desired = ceil(current × metric / target)`, no change within the 0.1 tolerance.
- Pods metric (per-pod average of `vllm:num_requests_running`, AverageValue target): pods without metrics
  (starting) are set aside and the ratio recomputed conservatively — they count as 0 on scale-up and as
  100% of target on scale-down; if the recompute reverses direction or falls inside the tolerance, no
  change (this is also why HPA does not scale down while pods are Pending, kubernetes#82285). With no
  ready pod the ratio cannot be formed and nothing happens (kubernetes#130130).
- Default behavior: scale-up stabilization 0 s, policies Percent 100 / 15 s and Pods 4 / 15 s, selectPolicy
  Max; scale-down stabilization 300 s (max of recommendations), Percent 100 / 15 s.
- Metric pipeline lag: Prometheus scrape (15 s) + prometheus-adapter (~15 s): the metric is read from
  the newest scrape at least `adapter_lag_seconds` old.
"""

from __future__ import annotations

import math
from collections import deque

from simulations.autoscalers.base import Context

TOLERANCE = 0.1
SYNC_PERIOD_SECONDS = 15.0
ADAPTER_LAG_SECONDS = 15.0


class HpaBehavior:
    """Stabilization windows and rate-limit policies (`behavior`), with the documented defaults."""

    def __init__(self, down_window_seconds: float = 300.0, up_window_seconds: float = 0.0,
                 up_percent: float = 100.0, up_pods: int = 4, down_percent: float = 100.0,
                 period_seconds: float = 15.0):
        self.down_window, self.up_window = down_window_seconds, up_window_seconds
        self.up_percent, self.up_pods, self.down_percent = up_percent, up_pods, down_percent
        self.period = period_seconds
        self._recs: deque[tuple[float, int]] = deque()
        self._events: deque[tuple[float, int]] = deque()  # (time, replica change)

    def apply(self, now: float, current: int, recommendation: int, lo: int, hi: int) -> int:
        self._recs.append((now, recommendation))
        horizon = max(self.down_window, self.up_window)
        while self._recs and self._recs[0][0] < now - horizon:
            self._recs.popleft()
        # stabilizeRecommendationWithBehaviors: up = min over the up window, down = max over the down window
        up_rec = min(r for t, r in self._recs if t >= now - self.up_window)
        down_rec = max(r for t, r in self._recs if t >= now - self.down_window)
        stabilized = current
        if current < up_rec:
            stabilized = up_rec
        elif current > down_rec:
            stabilized = down_rec
        # normalizeDesiredReplicasWithBehaviors: rate limits relative to the replicas at the period start
        while self._events and self._events[0][0] <= now - self.period:
            self._events.popleft()
        added = sum(c for _, c in self._events if c > 0)
        removed = -sum(c for _, c in self._events if c < 0)
        desired = stabilized
        if desired > current:
            start = current - added
            limit = max(math.ceil(start * (1 + self.up_percent / 100.0)), start + self.up_pods)
            desired = min(desired, max(limit, current))
        elif desired < current:
            start = current + removed
            limit = math.ceil(start * (1 - self.down_percent / 100.0))
            desired = max(desired, min(limit, current))
        desired = max(lo, min(hi, desired))
        if desired != current:
            self._events.append((now, desired - current))
        return desired


class Hpa:
    name = "hpa"

    def __init__(self, target_running_per_pod: float, adapter_lag_seconds: float = ADAPTER_LAG_SECONDS):
        if not target_running_per_pod > 0:
            raise ValueError("the HPA target must be > 0")
        self.target = target_running_per_pod
        self.lag = adapter_lag_seconds
        self.interval_seconds = SYNC_PERIOD_SECONDS
        self.behavior = HpaBehavior()

    def initial_replicas(self, default: int) -> int:
        return default

    def recommend(self, current: int, metric_sum: float, with_metrics: int) -> int:
        """replica_calculator.go for a Pods metric (AverageValue): one recommendation."""
        if with_metrics <= 0:
            return current
        missing = max(0, current - with_metrics)
        ratio = metric_sum / (with_metrics * self.target)
        if missing == 0:
            return current if abs(ratio - 1.0) <= TOLERANCE else math.ceil(ratio * with_metrics - 1e-9)
        pods = with_metrics + missing
        if ratio > 1.0:  # scale-up: pods without metrics count as 0
            new_ratio = metric_sum / (pods * self.target)
        else:  # scale-down: they count as 100% of target
            new_ratio = (metric_sum + missing * self.target) / (pods * self.target)
        if abs(new_ratio - 1.0) <= TOLERANCE or (ratio > 1.0) != (new_ratio > 1.0):
            return current
        return math.ceil(new_ratio * pods - 1e-9)

    def tick(self, now: float, ctx: Context) -> int | None:
        sample = ctx.view.latest(now, self.lag)
        current = ctx.fleet.target
        if sample is None:
            return None
        rec = self.recommend(current, sample.running, sample.reporting_replicas)
        return self.behavior.apply(now, current, rec, ctx.min_replicas, ctx.max_replicas)
