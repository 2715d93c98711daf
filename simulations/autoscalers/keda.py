"""`keda`: a KEDA ScaledObject with a Prometheus trigger, as kedacore/keda and the HPA it generates do it.

Follows (see docs/baselines.md):
- `controllers/keda/hpa.go`, `newHPAForScaledObject`: KEDA generates an HPA whose `minReplicas` is
  `GetHPAMinReplicas()` (minReplicaCount if > 0, else 1), whose metric is External with the trigger's
  `metricType` and the `threshold` as target, and whose `behavior` is passed through. That HPA is the real
  controller (`simulations.autoscalers.hpa`): synced every 15 s, seeded by `recordInitialRecommendation`,
  stabilized and rate-limited the same way. The HPA computes, in `replica_calculator.go`:
  - AverageValue (`GetExternalPerPodMetricReplicas`): `ratio = value / (threshold × status.replicas)`;
    outside the 0.1 tolerance `desired = ceil(value / threshold)`;
  - Value (`GetExternalMetricReplicas` → `getUsageRatioReplicaCount`): `ratio = value / threshold`;
    outside the tolerance `desired = ceil(ratio × ready pods)`.
- `pkg/scalers/prometheus_scaler.go`, `ExecutePromQuery` / `GetMetricsAndActivity`: the query's value at
  the time of asking (the latest scrape); an empty result or NaN is 0 with the default
  `ignoreNullValues: true`; the trigger is active when `value > activationThreshold` (default 0).
- `pkg/scaling/executor/scale_scaledobjects.go`, `RequestScale` (every `pollingInterval`): with triggers
  active and 0 replicas it scales to max(minReplicaCount, 1) and records the last active time; with none
  active, more than 0 replicas and `minReplicaCount` 0, it scales to 0 once `cooldownPeriod` has passed
  since the last active time (`scaleToZeroOrIdle`). With minReplicaCount ≥ 1 activation and
  cooldownPeriod change nothing. The HPA is disabled while the target has 0 replicas.

Signals (`signal`):
- `waiting`: `sum(vllm:num_requests_waiting)`, AverageValue (the vLLM production-stack chart's trigger);
- `queue_p90`: `histogram_quantile(0.9, sum by (le) (rate(vllm:request_queue_time_seconds_bucket[1m])))`,
  metricType Value (a latency does not divide by pods).
With minReplicaCount 0 the production-stack chart adds a keepalive trigger on the router's request counter
(`sum(rate(vllm:num_incoming_requests_total[1m]) > bool 0)`), modelled as "active while requests arrive".
"""

from __future__ import annotations

import math
from collections.abc import Callable

from simulations.autoscalers.base import Context
from simulations.autoscalers.hpa import (
    DEFAULT_DOWN_POLICIES,
    DEFAULT_DOWN_WINDOW_SECONDS,
    SYNC_PERIOD_SECONDS,
    TOLERANCE,
    HpaBehavior,
    ScalingPolicy,
    group_pods,
    within_tolerance,
)

DEFAULT_COOLDOWN_SECONDS = 300.0
DEFAULT_POLLING_SECONDS = 15.0  # the production-stack chart's pollingInterval (KEDA's default is 30)


def _waiting(ctx: Context, now: float) -> float | None:
    s = ctx.view.latest(now)
    return None if s is None else s.waiting


def _queue_p90(ctx: Context, now: float) -> float | None:
    return ctx.view.signals(now).queue_time_p90_seconds.fresh(math.inf)


# name → (query value at `now`, metricType)
KEDA_SIGNALS: dict[str, tuple[Callable[[Context, float], float | None], str]] = {
    "waiting": (_waiting, "AverageValue"),
    "queue_p90": (_queue_p90, "Value"),
}


class Keda:
    name = "keda"

    def __init__(self, threshold: float = 5.0, signal: str = "waiting",
                 down_window_seconds: float = DEFAULT_DOWN_WINDOW_SECONDS, min_replicas: int | None = None,
                 cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS, activation_threshold: float = 0.0,
                 polling_seconds: float = DEFAULT_POLLING_SECONDS,
                 down_policies: tuple[ScalingPolicy, ...] = DEFAULT_DOWN_POLICIES):
        if not threshold > 0:
            raise ValueError("the KEDA threshold must be > 0")
        if signal not in KEDA_SIGNALS:
            raise ValueError(f"unknown KEDA signal {signal!r}: use one of {', '.join(KEDA_SIGNALS)}")
        if min_replicas is not None and min_replicas < 0:
            raise ValueError("minReplicaCount must be ≥ 0")
        self.threshold = threshold
        self.signal = signal
        self.query, self.metric_type = KEDA_SIGNALS[signal]
        self.min_replicas = min_replicas
        self.cooldown = cooldown_seconds
        self.activation = activation_threshold
        self.polling = polling_seconds
        self.interval_seconds = min(SYNC_PERIOD_SECONDS, polling_seconds)
        self.behavior = HpaBehavior(down_window_seconds, down_policies=down_policies)
        self.last_active: float | None = None
        self._next_poll = 0.0
        self._next_sync = 0.0

    def initial_replicas(self, default: int) -> int:
        return default if self.min_replicas is None else max(default, self.min_replicas)

    def recommend(self, current: int, value: float, status_replicas: int | None = None,
                  ready: int | None = None) -> int:
        """The generated HPA's External-metric recommendation."""
        if self.metric_type == "AverageValue":
            status = current if status_replicas is None else status_replicas
            if status > 0 and within_tolerance(value / (self.threshold * status), TOLERANCE):
                return current
            return math.ceil(value / self.threshold - 1e-9)
        ratio = value / self.threshold
        if within_tolerance(ratio, TOLERANCE):
            return current
        return math.ceil(ratio * (current if ready is None else ready) - 1e-9)

    def _active(self, ctx: Context, now: float, value: float) -> bool:
        if value > self.activation:
            return True
        # the keepalive trigger on requests reaching the router (counted even with no replica up)
        rate = ctx.view.signals(now).request_rate.fresh(math.inf)
        return bool(rate and rate > 0) or ctx.fleet.in_flight > 0

    def _operator(self, now: float, ctx: Context, lo: int) -> int | None:
        """`RequestScale`: the KEDA operator's 0 ↔ 1 part."""
        current = ctx.fleet.target
        value = self.query(ctx, now)
        active = self._active(ctx, now, 0.0 if value is None else value)  # ignoreNullValues: null is 0
        if active:
            self.last_active = now
            if current == 0:
                return max(lo, 1)
            return None
        # never active: creation + initialCooldownPeriod (0) has passed; else cooldownPeriod after the last
        if current > 0 and lo == 0 and (self.last_active is None or self.last_active + self.cooldown < now):
            return 0
        return None

    def _hpa(self, now: float, ctx: Context, lo: int, hi: int) -> int | None:
        """One sync of the generated HPA (minReplicas = max(minReplicaCount, 1))."""
        current = ctx.fleet.target
        hpa_lo = max(lo, 1)
        self.behavior.record_initial(now, current)
        if current == 0:
            return None
        if current > hi or current < hpa_lo:
            desired = hi if current > hi else hpa_lo
            self.behavior.store_event(now, current, desired)
            return desired
        value = self.query(ctx, now)
        if value is None:
            value = 0.0  # ignoreNullValues: true
        counts = ctx.fleet.replica_counts(now)
        sample = ctx.view.latest(now)
        pods = group_pods(counts, sample.reporting_replicas if sample else 0)
        rec = self.recommend(current, value, pods.status_replicas, counts.ready)
        return self.behavior.apply(now, current, rec, hpa_lo, hi)

    def tick(self, now: float, ctx: Context) -> int | None:
        lo = ctx.min_replicas if self.min_replicas is None else self.min_replicas
        hi = max(lo, 1, ctx.max_replicas)
        if now + 1e-9 >= self._next_poll:
            self._next_poll = now + self.polling
            out = self._operator(now, ctx, lo)
            if out is not None:
                return out
        if now + 1e-9 >= self._next_sync:
            self._next_sync = now + SYNC_PERIOD_SECONDS
            return self._hpa(now, ctx, lo, hi)
        return None
