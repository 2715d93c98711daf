"""`keda`: a KEDA ScaledObject with a Prometheus trigger, shared/docs/autoscaler-anchors.md §(b)2 and §(b)9.

The vLLM production-stack configuration: query `sum(vllm:num_requests_waiting)`, `threshold` 5 (swept),
metricType AverageValue, minReplicaCount ≥ 1 (so activation is ignored), and the generated HPA polls every
15 s with the default behavior (§(b)1). For an External AverageValue metric the HPA computes
`desired = ceil(value / threshold)` and keeps the current count when `value / (threshold × current)` is
within the 0.1 tolerance. The value is read from Prometheus at the HPA's poll (scrape age up to 15 s).
"""

from __future__ import annotations

import math

from simulations.autoscalers.base import Context
from simulations.autoscalers.hpa import SYNC_PERIOD_SECONDS, TOLERANCE, HpaBehavior


class Keda:
    name = "keda"

    def __init__(self, threshold: float = 5.0):
        if not threshold > 0:
            raise ValueError("the KEDA threshold must be > 0")
        self.threshold = threshold
        self.interval_seconds = SYNC_PERIOD_SECONDS
        self.behavior = HpaBehavior()

    def initial_replicas(self, default: int) -> int:
        return default

    def recommend(self, current: int, value: float) -> int:
        if current > 0 and abs(value / (self.threshold * current) - 1.0) <= TOLERANCE:
            return current
        return math.ceil(value / self.threshold - 1e-9)

    def tick(self, now: float, ctx: Context) -> int | None:
        sample = ctx.view.latest(now)
        if sample is None:
            return None
        current = ctx.fleet.target
        rec = self.recommend(current, sample.waiting)
        return self.behavior.apply(now, current, rec, ctx.min_replicas, ctx.max_replicas)
