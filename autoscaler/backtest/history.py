"""A model's history from Prometheus range queries: the live source's PromQL, over a time range.

`History.frame` holds one column per signal plus the replicas that actually ran (`count` of scrape
instances exposing the queue gauge), indexed by the step grid, NaN where Prometheus had no value.
Latency histograms come, as in the live source, from one range query of per-`le` bucket increases each:
per step a `LatencyHistogram` (None where Prometheus had none) and, from it, the p90 signal.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np
import pandas as pd

from autoscaler.core.signals import DEFAULT_RATE_WINDOW_SECONDS, LatencyHistogram
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.engines import QUANTILE, SignalName, engine_metrics
from autoscaler.sources.histogram import latency_histogram, parse_le, quantile_of
from autoscaler.sources.promql import REPLICAS, PromQLBuilder

MAX_STEPS = 1_000_000  # decisions one backtest replays: nearly two years at the default 60-s step


class RangeSource(Protocol):
    """What fetch_history reads from (`autoscaler.backtest.prom_range.PrometheusRange`)."""

    url: str

    def query_range(self, promql: str, start: float, end: float, step_seconds: float) -> pd.DataFrame: ...


@dataclass(frozen=True)
class History:
    frame: pd.DataFrame  # index: the step grid (unix seconds); a column per SignalName value and REPLICAS
    queries: int
    # per quantile signal, the histogram behind it at each step (age 0); None = missing
    histograms: dict[SignalName, list[LatencyHistogram | None]] = field(default_factory=dict)
    window_seconds: float = DEFAULT_RATE_WINDOW_SECONDS  # the rate()/histogram window the queries used

    @property
    def times(self) -> np.ndarray:
        return self.frame.index.to_numpy(dtype=float)

    @property
    def replicas(self) -> np.ndarray:
        """Replicas that actually exposed metrics; NaN = unknown."""
        return self.frame[REPLICAS].to_numpy(dtype=float)

    @cached_property
    def signals(self) -> dict[SignalName, np.ndarray]:
        """Each signal as an array over the step grid (NaN = missing): the replay reads these per step."""
        return {s: self.frame[s.value].to_numpy(dtype=float) for s in SignalName}

    def histogram(self, signal: SignalName, i: int) -> LatencyHistogram | None:
        hs = self.histograms.get(signal)
        return hs[i] if hs is not None else None

    def value(self, signal: SignalName, i: int) -> float | None:
        v = float(self.signals[signal][i])
        return v if math.isfinite(v) and v >= 0 else None


def _labels(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c != "value"]


def _series(frame: pd.DataFrame) -> Iterator[tuple[dict[str, str], pd.DataFrame]]:
    """(labels, that series' rows) per distinct label set of a range answer."""
    cols = _labels(frame)
    if frame.empty:
        return
    if not cols:
        yield {}, frame
        return
    for key, rows in frame.groupby(cols, dropna=False, sort=False):
        values = key if isinstance(key, tuple) else (key,)
        yield {c: v for c, v in zip(cols, values, strict=True) if isinstance(v, str)}, rows


def _policy_series(frame: pd.DataFrame, builder: PromQLBuilder,
                   policy: ModelScalingPolicy) -> list[tuple[dict[str, str], pd.DataFrame]]:
    """The series of the first of the policy's keys that has any (several for a bucket query)."""
    engine = engine_metrics(policy.spec.model.engine)
    by_key: dict[tuple[str, str], list[tuple[dict[str, str], pd.DataFrame]]] = {}
    for labels, rows in _series(frame):
        by_key.setdefault(builder.series_key(engine, labels), []).append((labels, rows))
    return next((by_key[k] for k in builder.policy_keys(engine, policy) if k in by_key), [])


def _step_index(rows: pd.DataFrame, start: float, step_seconds: float) -> np.ndarray:
    return np.rint((rows.index.to_numpy(dtype=float) - start) / step_seconds).astype(np.int64)


def _on_grid(rows: pd.DataFrame, start: float, step_seconds: float, n: int) -> np.ndarray:
    """One series' values at the n grid steps, NaN where it has no sample."""
    i = _step_index(rows, start, step_seconds)
    keep = (i >= 0) & (i < n)
    return pd.Series(rows["value"].to_numpy()[keep], index=i[keep]).reindex(range(n)).to_numpy(dtype=float)


def _histograms(buckets: list[tuple[dict[str, str], pd.DataFrame]], start: float, step_seconds: float,
                n: int) -> list[LatencyHistogram | None]:
    """Per step, the histogram of the bucket samples at that step; None for every step when the series
    are not one per parseable `le`."""
    les = [parse_le(labels.get("le")) for labels, _ in buckets]
    if not buckets or None in les or len(set(les)) != len(les):
        return [None] * n
    long = pd.concat([pd.DataFrame({"i": _step_index(rows, start, step_seconds), "le": le,
                                    "count": rows["value"].to_numpy()})
                      for le, (_, rows) in zip(les, buckets, strict=True)])
    out: list[LatencyHistogram | None] = [None] * n
    for i, b in long[(long["i"] >= 0) & (long["i"] < n)].groupby("i"):
        out[int(i)] = latency_histogram(zip(b["le"], b["count"], strict=True), 0.0)
    return out


def grid_steps(start: float, end: float, step_seconds: float) -> int:
    """The decisions a backtest replays from `start` to `end`; ValueError for a range it cannot hold."""
    if not (math.isfinite(start) and math.isfinite(end) and end > start):
        raise ValueError(f"--end ({end:g}) must be after --start ({start:g})")
    n = math.floor((end - start) / step_seconds) + 1
    if n > MAX_STEPS:
        raise ValueError(f"{n:.3g} steps from --start to --end; at most {MAX_STEPS:,}: a longer --step or a "
                         "shorter range")
    return n


def fetch_history(source: RangeSource, policy: ModelScalingPolicy, start: float, end: float, step_seconds: float,
                  builder: PromQLBuilder | None = None) -> History:
    """Range-query every signal (and the replica count) for one policy. Raises SourceError on failure."""
    builder = builder or PromQLBuilder()
    n = grid_steps(start, end, step_seconds)
    frame = pd.DataFrame(np.nan, index=pd.Index(start + step_seconds * np.arange(n), name="time"),
                         columns=[*(s.value for s in SignalName), REPLICAS])
    histograms: dict[SignalName, list[LatencyHistogram | None]] = {}
    plan = builder.plan([policy], source.url, extra=(REPLICAS,))
    for q in plan.queries:
        mine = _policy_series(source.query_range(q.promql, start, end, step_seconds), builder, policy)
        if q.shape == "buckets":
            hs = histograms[SignalName(q.signal)] = _histograms(mine, start, step_seconds, n)
            p90 = [quantile_of(QUANTILE, h) if h is not None else None for h in hs]
            frame[q.signal] = [np.nan if v is None else v for v in p90]
        elif mine:  # one series per key; were there several, the last would win, as in the live source
            frame[q.signal] = _on_grid(mine[-1][1], start, step_seconds, n)
    return History(frame, len(plan.queries), histograms, builder.window_seconds)
