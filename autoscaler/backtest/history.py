"""A model's history from Prometheus range queries: the live source's PromQL, over a time range.

Each signal becomes an array over the step grid (NaN where Prometheus had no value), plus the replicas
that actually ran (`count` of scrape instances exposing the queue gauge). Latency histograms come, as in
the live source, from one range query of per-`le` bucket increases each: per step a `LatencyHistogram`
(None where Prometheus had none) and, from it, the p90 signal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from autoscaler.core.signals import LatencyHistogram
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.engines import QUANTILE, SignalName, engine_metrics
from autoscaler.sources.histogram import latency_histogram, parse_le, quantile_of
from autoscaler.sources.prom_api import PrometheusAPI, Series
from autoscaler.sources.promql import REPLICAS, PromQLBuilder


@dataclass(frozen=True)
class History:
    times: np.ndarray  # unix seconds, the step grid
    signals: dict[SignalName, np.ndarray]  # NaN = missing
    replicas: np.ndarray  # replicas that actually exposed metrics; NaN = unknown
    queries: int
    # per quantile signal, the histogram behind it at each step (age 0); None = missing
    histograms: dict[SignalName, list[LatencyHistogram | None]] = field(default_factory=dict)

    def histogram(self, signal: SignalName, i: int) -> LatencyHistogram | None:
        hs = self.histograms.get(signal)
        return hs[i] if hs is not None else None

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


def _pick_buckets(series: list[Series], builder: PromQLBuilder,
                  policy: ModelScalingPolicy) -> dict[float, Series] | None:
    """The policy's bucket series by upper bound, or None when absent or not one series per bucket."""
    engine = engine_metrics(policy.spec.model.engine)
    keys = builder.policy_keys(engine, policy)
    for k in keys:
        mine = [s for s in series if builder.series_key(engine, s.labels) == k]
        if not mine:
            continue
        out: dict[float, Series] = {}
        for s in mine:
            le = parse_le(s.labels.get("le"))
            if le is None or le in out:
                return None
            out[le] = s
        return out
    return None


def _histograms(buckets: dict[float, Series], start: float, step_seconds: float,
                n: int) -> list[LatencyHistogram | None]:
    per_step: list[list[tuple[float, float]]] = [[] for _ in range(n)]
    for le, s in buckets.items():
        for t, v in s.points:
            i = round((t - start) / step_seconds)
            if 0 <= i < n:
                per_step[i].append((le, v))
    return [latency_histogram(b, 0.0) if b else None for b in per_step]


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
    histograms: dict[SignalName, list[LatencyHistogram | None]] = {}
    for q in plan.queries:
        if q.shape == "buckets":
            signal = SignalName(q.signal)
            b = _pick_buckets(api.query_range(q.promql, start, end, step_seconds), builder, policy)
            hs: list[LatencyHistogram | None] = _histograms(b, start, step_seconds, n) if b else [None] * n
            histograms[signal] = hs
            for i, h in enumerate(hs):
                v = quantile_of(QUANTILE, h) if h is not None else None
                if v is not None:
                    signals[signal][i] = v
            continue
        s = _pick(api.query_range(q.promql, start, end, step_seconds), builder, policy)
        if s is None:
            continue
        arr = replicas if q.signal == REPLICAS else signals[SignalName(q.signal)]
        for t, v in s.points:
            i = round((t - start) / step_seconds)
            if 0 <= i < n:
                arr[i] = v
    return History(times, signals, replicas, len(plan.queries), histograms)
