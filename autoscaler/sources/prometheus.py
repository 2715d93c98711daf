"""Signals from Prometheus: one instant query per signal per (Prometheus, engine, labelSelector) group.

A tick for a thousand vLLM models sharing a Prometheus and a selector is 9 queries (6 value signals, 2
histograms' bucket increases, one for sample freshness), whatever the number of models. The p90
signals are computed here from the bucket increases exactly as PromQL's histogram_quantile would, and
the buckets themselves become the `LatencyHistogram`s the core judges SLO attainment on.

Each signal's age is now − the newest sample time of the model's series (from `timestamp()`), so a
Prometheus that still answers from old data is seen as stale. A failed query, an absent series, a NaN
or a negative answer gives the last good value with its growing age (or MISSING if there never was
one), never a zero. A histogram that cannot be had is None, never an invented empty one; a window in
which no request finished is an honest histogram with total 0.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from prometheus_client import CollectorRegistry

from autoscaler.core.signals import LatencyHistogram, Measured, Signals
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.base import load_signals, with_histograms
from autoscaler.sources.engines import QUANTILE, SIGNAL_KIND, EngineMetrics, SignalName, engine_metrics
from autoscaler.sources.histogram import latency_histogram, parse_le, quantile_of
from autoscaler.sources.lastknown import LastKnown
from autoscaler.sources.prom_api import PrometheusAPI, Sample, SourceError
from autoscaler.sources.promql import FRESHNESS, GroupKey, PlannedQuery, PromQLBuilder
from autoscaler.sources.telemetry import ErrorKind, SourceTelemetry, telemetry_for

log = logging.getLogger("autoscaler.sources.prometheus")

SIGNAL_FIELDS: tuple[SignalName, ...] = tuple(SignalName)


class PrometheusMetricsSource:
    """`MetricsSource` over the Prometheus HTTP API.

    `url` is the default Prometheus (a policy's `spec.metrics.prometheus.url` overrides it).
    After each `collect`, `failed_policies` holds the keys whose queries failed (for failover) and
    `last_query_count` the number of HTTP queries made.
    """

    name: Final = "prometheus"

    def __init__(
        self,
        url: str,
        *,
        builder: PromQLBuilder | None = None,
        timeout_seconds: float = 5.0,
        max_parallel_queries: int = 4,
        registry: CollectorRegistry | None = None,
        telemetry: SourceTelemetry | None = None,
        api_factory: Callable[[str], PrometheusAPI] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.builder = builder or PromQLBuilder()
        self.timeout_seconds = timeout_seconds
        self.max_parallel_queries = max(1, max_parallel_queries)
        self.telemetry = telemetry or telemetry_for(registry)
        self._api_factory = api_factory or (lambda u: PrometheusAPI(u, timeout_seconds=timeout_seconds))
        self._apis: dict[str, PrometheusAPI] = {}
        self._last = LastKnown()
        self.failed_policies: frozenset[str] = frozenset()
        self.last_query_count = 0

    def api(self, url: str) -> PrometheusAPI:
        if url not in self._apis:
            self._apis[url] = self._api_factory(url)
        return self._apis[url]

    def close(self) -> None:
        for a in self._apis.values():
            a.close()
        self._apis.clear()

    def _run(self, q: PlannedQuery, now: float) -> list[Sample] | SourceError:
        self.telemetry.requests.labels(source=self.name).inc()
        try:
            return self.api(q.group.url).query(q.promql, now)
        except SourceError as e:
            self.telemetry.error(self.name, e.kind)
            return e

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        started = time.perf_counter()
        plan = self.builder.plan(policies, self.url)
        if self.max_parallel_queries > 1 and len(plan.queries) > 1:
            with ThreadPoolExecutor(min(self.max_parallel_queries, len(plan.queries))) as pool:
                answers = list(pool.map(lambda q: self._run(q, now), plan.queries))
        else:
            answers = [self._run(q, now) for q in plan.queries]
        self.last_query_count = len(plan.queries)

        by_group: dict[GroupKey, dict[str, list[Sample] | SourceError]] = {}
        for q, a in zip(plan.queries, answers, strict=True):
            by_group.setdefault(q.group, {})[q.signal] = a

        out: dict[str, Signals] = {}
        failed: set[str] = set()
        failures_by_url: dict[str, str | None] = {}
        for group, members in plan.groups.items():
            answers_g = by_group.get(group, {})
            errors = [a for a in answers_g.values() if isinstance(a, SourceError)]
            if errors:
                failed.update(p.key for p in members)
                failures_by_url.setdefault(group.url, str(errors[0]))
            else:
                failures_by_url.setdefault(group.url, None)
            for p, sig in self._group_signals(group, members, answers_g, now).items():
                out[p] = sig
        for url, failure in failures_by_url.items():
            self.telemetry.episode(f"prometheus {url}", failure)
        self._last.keep_only(p.key for p in policies)
        self.failed_policies = frozenset(failed)
        self.telemetry.collect_seconds.labels(source=self.name).observe(time.perf_counter() - started)
        return out

    def _group_signals(
        self,
        group: GroupKey,
        members: Sequence[ModelScalingPolicy],
        answers: dict[str, list[Sample] | SourceError],
        now: float,
    ) -> dict[str, Signals]:
        engine = engine_metrics(group.engine)
        freshness: dict[tuple[str, str], float] = {}
        fa = answers.get(FRESHNESS)
        if isinstance(fa, list):
            for s in fa:
                if math.isfinite(s.value):
                    k = self.builder.series_key(engine, s.labels)
                    freshness[k] = max(freshness.get(k, -math.inf), s.value)

        values: dict[str, dict[SignalName, Measured]] = {p.key: {} for p in members}
        histograms: dict[str, dict[SignalName, LatencyHistogram | None]] = {p.key: {} for p in members}
        for signal in SIGNAL_FIELDS:
            if signal.value not in answers:
                continue  # the engine does not expose it: stays MISSING
            a = answers[signal.value]
            if SIGNAL_KIND[signal] == "quantile":
                series: dict[tuple[str, str], list[Sample]] = {}
                for s in a if isinstance(a, list) else ():
                    series.setdefault(self.builder.series_key(engine, s.labels), []).append(s)
                for p in members:
                    found = self._histogram(engine, p, series, freshness, now) if isinstance(a, list) else None
                    m = None
                    if found is not None:
                        h, t = found
                        m = self._accept(p.key, signal, quantile_of(QUANTILE, h), t, now)
                    histograms[p.key][signal] = found[0] if found is not None else None
                    values[p.key][signal] = m if m is not None else self._last.get(p.key, signal.value, now)
                continue
            by_key: dict[tuple[str, str], Sample] = {}
            dups: set[tuple[str, str]] = set()
            if isinstance(a, list):
                for s in a:
                    k = self.builder.series_key(engine, s.labels)
                    if k in by_key:
                        dups.add(k)
                    by_key[k] = s
                self.telemetry.error(self.name, "duplicate_series", len(dups))
            for p in members:
                m = None
                if isinstance(a, list):
                    for k in self.builder.policy_keys(engine, p):
                        if k in dups:
                            break
                        if k in by_key:
                            s = by_key[k]
                            m = self._accept(p.key, signal, s.value, _sample_time(s, freshness.get(k)), now)
                            break
                values[p.key][signal] = m if m is not None else self._last.get(p.key, signal.value, now)
        return {k: with_histograms(load_signals(v), histograms[k]) for k, v in values.items()}

    def _histogram(self, engine: EngineMetrics, p: ModelScalingPolicy,
                   series: dict[tuple[str, str], list[Sample]], freshness: dict[tuple[str, str], float],
                   now: float) -> tuple[LatencyHistogram, float] | None:
        """Policy `p`'s histogram out of a bucket query's answer (`series`: its samples by series key, one
        per `le`) and its sample time, aged like the other signals; None when its series are absent,
        duplicated or not a histogram."""
        for k in self.builder.policy_keys(engine, p):
            samples = series.get(k)
            if not samples:
                continue
            seen: set[str] = set()
            buckets: list[tuple[float, float]] = []
            bad: ErrorKind | None = None
            for s in samples:
                raw = s.labels.get("le")
                le = parse_le(raw)
                if raw is None or le is None or raw in seen:
                    # Two answers for one bucket, or a series without a usable bucket bound: this
                    # model's buckets cannot be trusted.
                    bad = "duplicate_series" if raw in seen else "bad_payload"
                    break
                if not math.isfinite(s.value) or s.value < 0:
                    bad = "non_finite" if not math.isfinite(s.value) else "negative"
                    break
                seen.add(raw)
                buckets.append((le, s.value))
            if bad is not None:
                self.telemetry.error(self.name, bad)
                return None
            t = _sample_time(min(samples, key=lambda s: s.timestamp), freshness.get(k))
            h = latency_histogram(buckets, max(0.0, now - t))
            return (h, t) if h is not None else None  # None: no +Inf bucket, the total is unknown
        return None

    def _accept(self, policy_key: str, signal: SignalName, v: float | None, t: float,
                now: float) -> Measured | None:
        """`v`, observed at `t`, as a Measured (remembered as the last good value), or None when it is
        missing, NaN or negative."""
        if v is None:
            return None  # a quantile of a window with no finished request: not a fault
        if not math.isfinite(v):
            # histogram_quantile is NaN when no request finished in the window: not a fault.
            if not (SIGNAL_KIND[signal] == "quantile" and v != v):
                self.telemetry.error(self.name, "non_finite")
            return None
        if v < 0:
            self.telemetry.error(self.name, "negative")
            return None
        self._last.put(policy_key, signal.value, v, t)
        return Measured(v, max(0.0, now - t))


def _sample_time(s: Sample, fresh_t: float | None) -> float:
    """When sample `s` was observed: the newest scrape of the model's series (from the freshness query)
    if known, else the evaluation time."""
    return s.timestamp if fresh_t is None else min(s.timestamp, fresh_t)
