"""A model's history from Prometheus range queries: the live source's PromQL, over a time range.

Each signal becomes an array over the step grid (NaN where Prometheus had no value), plus the replicas
that actually ran (`count` of scrape instances exposing the queue gauge).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.engines import SignalName, engine_metrics
from autoscaler.sources.prom_api import PrometheusAPI, Series
from autoscaler.sources.promql import REPLICAS, PromQLBuilder


@dataclass(frozen=True)
class History:
    times: np.ndarray  # unix seconds, the step grid
    signals: dict[SignalName, np.ndarray]  # NaN = missing
    replicas: np.ndarray  # replicas that actually exposed metrics; NaN = unknown
    queries: int

    def value(self, signal: SignalName, i: int) -> float | None:
        v = float(self.signals[signal][i])
        return v if math.isfinite(v) and v >= 0 else None


def _pick(series: list[Series], builder: PromQLBuilder, policy: ModelScalingPolicy) -> Series | None:
    engine = engine_metrics(policy.spec.model.engine)
    by_key = {builder.series_key(engine, s.labels): s for s in series}
    for k in builder.policy_keys(engine, policy):
        if k in by_key:
            return by_key[k]
    return None


def fetch_history(api: PrometheusAPI, policy: ModelScalingPolicy, start: float, end: float, step_seconds: float,
                  builder: PromQLBuilder | None = None) -> History:
    """Range-query every signal (and the replica count) for one policy. Raises SourceError on failure."""
    builder = builder or PromQLBuilder()
    if end <= start:
        raise ValueError(f"--end ({end}) must be after --start ({start})")
    n = math.floor((end - start) / step_seconds) + 1
    times = start + step_seconds * np.arange(n)
    plan = builder.plan([policy], api.url, extra=(REPLICAS,))
    signals: dict[SignalName, np.ndarray] = {s: np.full(n, np.nan) for s in SignalName}
    replicas = np.full(n, np.nan)
    for q in plan.queries:
        s = _pick(api.query_range(q.promql, start, end, step_seconds), builder, policy)
        if s is None:
            continue
        arr = replicas if q.signal == REPLICAS else signals[SignalName(q.signal)]
        for t, v in s.points:
            i = round((t - start) / step_seconds)
            if 0 <= i < n:
                arr[i] = v
    return History(times, signals, replicas, len(plan.queries))
