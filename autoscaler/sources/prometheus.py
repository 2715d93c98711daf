"""Signals from Prometheus: one instant query per signal per (Prometheus, engine, labelSelector) group.

A tick for a thousand vLLM models sharing a Prometheus and a selector is 9 queries (6 value signals, 2
histograms' bucket increases, one for sample freshness), whatever the number of models. The p90
signals are computed here from the bucket increases exactly as PromQL's histogram_quantile would, and
the buckets themselves become the `LatencyHistogram`s the core judges SLO attainment on.

Each signal's age is now − the newest sample time of the model's series (from `timestamp()`), so a
Prometheus that still answers from old data is seen as stale; when that freshness query fails, the
gauges' ages are unknown and they count as not answered. A failed query, an absent series, a NaN, a
negative or an implausible answer (see `plausible`) gives the last good value with its growing age (or
MISSING if there never was one), never a zero. A histogram that cannot be had is None, never an
invented empty one; a window in which no request finished is an honest histogram with total 0.

Containment: a bad answer (any exception while querying or reading it) fails its query group only and
is counted by kind; `collect` never raises for the batch. A policy's own Prometheus URL is used only
when it is in `allowed_urls` (the controller's `--prometheus-allowed-url`, default: only the default
URL): anything else is a per-policy error (`policy_errors`, counted as `url_not_allowed`), so a policy
author cannot make the controller send requests to an address of their choosing.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Final

from prometheus_client import CollectorRegistry

from autoscaler.core.signals import LatencyHistogram, Measured, Signals
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.base import load_signals, with_histograms
from autoscaler.sources.engines import QUANTILE, SIGNAL_KIND, EngineMetrics, SignalName, engine_metrics
from autoscaler.sources.histogram import latency_histogram, parse_le, quantile_of
from autoscaler.sources.lastknown import LastKnown
from autoscaler.sources.plausible import in_range, plausible
from autoscaler.sources.prom_api import DEFAULT_MAX_BYTES, PrometheusAPI, Sample, SourceError
from autoscaler.sources.prom_auth import PromAuth
from autoscaler.sources.promql import FRESHNESS, GroupKey, PromQLBuilder, bad_label_names
from autoscaler.sources.telemetry import ErrorKind, SourceTelemetry, telemetry_for
from autoscaler.sources.urls import normalize_url

log = logging.getLogger("autoscaler.sources.prometheus")

SIGNAL_FIELDS: tuple[SignalName, ...] = tuple(SignalName)


class PrometheusMetricsSource:
    """`MetricsSource` over the Prometheus HTTP API.

    `url` is the default Prometheus (a policy's `spec.metrics.prometheus.url` overrides it when it is
    in `allowed_urls`; None allows any URL, for tools that run with the user's own rights).
    After each `collect`, `failed_policies` holds the keys whose queries failed (for failover),
    `policy_errors` a one-line reason per policy that could not be queried at all (disallowed URL, bad
    labelSelector key), and `last_query_count` the number of HTTP queries made.
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
        allowed_urls: Iterable[str] | None = None,
        max_response_bytes: int = DEFAULT_MAX_BYTES,
        auth: PromAuth | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.builder = builder or PromQLBuilder()
        self.timeout_seconds = timeout_seconds
        self.max_parallel_queries = max(1, max_parallel_queries)
        self.telemetry = telemetry or telemetry_for(registry)
        self._api_factory = api_factory or (
            lambda u: PrometheusAPI(u, timeout_seconds=timeout_seconds, max_bytes=max_response_bytes, auth=auth))
        self.allowed_urls = None if allowed_urls is None else (
            frozenset(normalize_url(u) for u in allowed_urls) | {normalize_url(self.url)})
        self._apis: dict[str, PrometheusAPI] = {}
        self._last = LastKnown()
        self.failed_policies: frozenset[str] = frozenset()
        self.policy_errors: dict[str, str] = {}
        self.last_query_count = 0

    def api(self, url: str) -> PrometheusAPI:
        if url not in self._apis:
            self._apis[url] = self._api_factory(url)
        return self._apis[url]

    def close(self) -> None:
        for a in self._apis.values():
            a.close()
        self._apis.clear()

    def url_for(self, p: ModelScalingPolicy) -> str:
        """The Prometheus policy `p` is queried at: its own URL (when `refusal` allows it), else the default."""
        return (p.spec.metrics.prometheus.url or self.url).rstrip("/")

    def ask_all(self, queries: Sequence[tuple[str, str]], now: float) -> list[list[Sample] | SourceError]:
        """(Prometheus URL, PromQL) instant queries at `now`, up to `max_parallel_queries` at once; each answer,
        or the SourceError it failed with (counted)."""
        if self.max_parallel_queries > 1 and len(queries) > 1:
            with ThreadPoolExecutor(min(self.max_parallel_queries, len(queries))) as pool:
                return list(pool.map(lambda q: self._ask(q[0], q[1], now), queries))
        return [self._ask(url, promql, now) for url, promql in queries]

    def _ask(self, url: str, promql: str, now: float) -> list[Sample] | SourceError:
        self.telemetry.requests.labels(source=self.name).inc()
        try:
            return self.api(url).query(promql, now)
        except SourceError as e:
            self.telemetry.error(self.name, e.kind)
            return e
        except Exception as e:  # anything else an answer provokes fails this query only
            self.telemetry.error(self.name, "unexpected")
            return SourceError("unexpected", f"{type(e).__name__}: {str(e)[:200]}")

    def refusal(self, p: ModelScalingPolicy) -> tuple[ErrorKind, str] | None:
        """Why policy `p` cannot be queried at all, or None."""
        own = p.spec.metrics.prometheus.url
        if own and self.allowed_urls is not None and normalize_url(own) not in self.allowed_urls:
            return "url_not_allowed", (
                f"spec.metrics.prometheus.url {own[:200]!r} is not in the controller's allow-list; add it "
                f"with --prometheus-allowed-url (chart value prometheusAllowedUrls) or remove it to use "
                f"the default Prometheus")
        bad = bad_label_names(p.spec.metrics.label_selector)
        if bad:
            return "bad_selector", (f"spec.metrics.labelSelector key {bad[0][:100]!r} is not a Prometheus "
                                    f"label name ([a-zA-Z_][a-zA-Z0-9_]*)")
        return None

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        started = time.perf_counter()
        out: dict[str, Signals] = {}
        errors: dict[str, str] = {}
        queryable = []
        for p in policies:
            refused = self.refusal(p)
            if refused is None:
                queryable.append(p)
                self.telemetry.episode(f"prometheus policy {p.key}", None)
                continue
            kind, why = refused
            self.telemetry.error(self.name, kind)
            self.telemetry.episode(f"prometheus policy {p.key}", why)
            errors[p.key] = why
            out[p.key] = Signals()  # all missing: the policy holds, it never reads as "no load"
        self.policy_errors = errors
        plan = self.builder.plan(queryable, self.url)
        answers = self.ask_all([(q.group.url, q.promql) for q in plan.queries], now)
        self.last_query_count = len(plan.queries)

        by_group: dict[GroupKey, dict[str, list[Sample] | SourceError]] = {}
        for q, a in zip(plan.queries, answers, strict=True):
            by_group.setdefault(q.group, {})[q.signal] = a

        failed: set[str] = set()
        failures_by_url: dict[str, str | None] = {}
        for group, members in plan.groups.items():
            answers_g = by_group.get(group, {})
            bad = [a for a in answers_g.values() if isinstance(a, SourceError)]
            try:
                signals = self._group_signals(group, members, answers_g, now)
            except Exception as e:  # a bug reading one group's answers: that group holds, the rest go on
                self.telemetry.error(self.name, "unexpected")
                bad.append(SourceError("unexpected", f"{type(e).__name__}: {str(e)[:200]}"))
                signals = {p.key: self._last_known(group, p, now) for p in members}
            if bad:
                failed.update(p.key for p in members)
                failures_by_url.setdefault(group.url, str(bad[0]))
            else:
                failures_by_url.setdefault(group.url, None)
            out.update(signals)
        for url, failure in failures_by_url.items():
            self.telemetry.episode(f"prometheus {url}", failure)
        self._last.keep_only(p.key for p in queryable)
        self.failed_policies = frozenset(failed)
        self.telemetry.collect_seconds.labels(source=self.name).observe(time.perf_counter() - started)
        window = self.builder.window_seconds  # what the rates and histograms were taken over
        return {k: replace(v, rate_window_seconds=window) for k, v in out.items()}

    def pod_inflight(self, p: ModelScalingPolicy, now: float, max_age_seconds: float,
                     pod_label: str = "pod") -> dict[str, Measured]:
        """Running + waiting requests per pod of policy `p` (by the `pod` label the scrape config sets),
        from one instant query with the source's timeout and size limit. Only pods whose running gauge
        was scraped within `max_age_seconds` answer (the others are absent: unknown). Raises SourceError
        when the query fails or the policy may not be queried."""
        refused = self.refusal(p)
        if refused is not None:
            raise SourceError(refused[0], refused[1])
        engine = engine_metrics(p.spec.model.engine)
        q = self.builder.pod_inflight_query(engine, p, pod_label)
        if q is None:
            return {}
        fresh = self.builder.pod_inflight_query(engine, p, pod_label, freshness=True)
        promql = f"({q}) and on ({pod_label}) (time() - ({fresh}) <= {max_age_seconds:g})"
        url = self.url_for(p)
        self.telemetry.requests.labels(source=self.name).inc()
        try:
            answer = self.api(url).query(promql, now)
        except SourceError as e:
            self.telemetry.error(self.name, e.kind)
            raise
        out: dict[str, Measured] = {}
        for s in answer:
            pod = s.labels.get(pod_label)
            if not pod or not math.isfinite(s.value) or s.value < 0 or pod in out:
                continue
            out[pod] = Measured(s.value, 0.0)
        return out

    def _group_signals(
        self,
        group: GroupKey,
        members: Sequence[ModelScalingPolicy],
        answers: dict[str, list[Sample] | SourceError],
        now: float,
    ) -> dict[str, Signals]:
        engine = engine_metrics(group.engine)
        fa = answers.get(FRESHNESS)
        freshness = self._freshness(engine, fa)
        # Without the freshness answer a gauge's age is unknown (an instant query answers samples up to
        # the lookback, 5 minutes by default, old): gauges then count as not answered.
        ages_unknown = isinstance(fa, SourceError)
        values: dict[str, dict[SignalName, Measured]] = {p.key: {} for p in members}
        histograms: dict[str, dict[SignalName, LatencyHistogram | None]] = {p.key: {} for p in members}
        for signal in SIGNAL_FIELDS:
            if signal.value not in answers:
                continue  # the engine does not expose it: stays MISSING
            a = answers[signal.value]
            if SIGNAL_KIND[signal] == "quantile":
                self._quantile_signal(group, engine, members, signal, a, freshness, now, values, histograms)
            elif ages_unknown and SIGNAL_KIND[signal] in ("sum", "mean"):
                for p in members:
                    values[p.key][signal] = self._recall(group, p, signal, now)
            else:
                self._value_signal(group, engine, members, signal, a, freshness, now, values)
        return {k: with_histograms(load_signals(v), histograms[k]) for k, v in values.items()}

    def _freshness(self, engine: EngineMetrics, fa: list[Sample] | SourceError | None) -> dict[tuple[str, str], float]:
        """The newest sample time per series, from the FRESHNESS answer (empty without one)."""
        freshness: dict[tuple[str, str], float] = {}
        if isinstance(fa, list):
            for s in fa:
                if math.isfinite(s.value):
                    k = self.builder.series_key(engine, s.labels)
                    freshness[k] = max(freshness.get(k, -math.inf), s.value)
        return freshness

    def _quantile_signal(self, group: GroupKey, engine: EngineMetrics, members: Sequence[ModelScalingPolicy],
                         signal: SignalName, a: list[Sample] | SourceError, freshness: dict[tuple[str, str], float],
                         now: float, values: dict[str, dict[SignalName, Measured]],
                         histograms: dict[str, dict[SignalName, LatencyHistogram | None]]) -> None:
        """Each member's histogram for quantile `signal` and the quantile of it (or its last known value)."""
        series: dict[tuple[str, str], list[Sample]] = {}
        for s in a if isinstance(a, list) else ():
            series.setdefault(self.builder.series_key(engine, s.labels), []).append(s)
        for p in members:
            found = self._histogram(engine, p, series, freshness, now) if isinstance(a, list) else None
            m = None
            if found is not None:
                h, t = found
                m = self._accept(group, p, signal, quantile_of(QUANTILE, h), t, now)
            histograms[p.key][signal] = found[0] if found is not None else None
            values[p.key][signal] = m if m is not None else self._recall(group, p, signal, now)

    def _value_signal(self, group: GroupKey, engine: EngineMetrics, members: Sequence[ModelScalingPolicy],
                      signal: SignalName, a: list[Sample] | SourceError, freshness: dict[tuple[str, str], float],
                      now: float, values: dict[str, dict[SignalName, Measured]]) -> None:
        """Each member's value of `signal` from its own series (or its last known value); a series answered
        twice is no answer."""
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
                        m = self._accept(group, p, signal, s.value, _sample_time(s, freshness.get(k)), now)
                        break
            values[p.key][signal] = m if m is not None else self._recall(group, p, signal, now)

    @staticmethod
    def _identity(group: GroupKey, p: ModelScalingPolicy) -> tuple[object, ...]:
        """What a remembered value was measured for: an edited policy (another model, selector or
        Prometheus) must not inherit the old one's numbers."""
        return group.url, group.engine, group.selector, p.spec.model.name

    def _recall(self, group: GroupKey, p: ModelScalingPolicy, signal: SignalName, now: float) -> Measured:
        return self._last.get(p.key, signal.value, now, self._identity(group, p))

    def _last_known(self, group: GroupKey, p: ModelScalingPolicy, now: float) -> Signals:
        return load_signals({s: self._recall(group, p, s, now) for s in SIGNAL_FIELDS})

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

    def _accept(self, group: GroupKey, p: ModelScalingPolicy, signal: SignalName, v: float | None, t: float,
                now: float) -> Measured | None:
        """`v`, observed at `t`, as a Measured (remembered as the last good value), or None when it is
        missing, NaN, negative or implausible."""
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
        if not plausible(signal, v):
            self.telemetry.error(self.name, "implausible")
            return None
        v = in_range(signal, v)
        self._last.put(p.key, signal.value, v, t, self._identity(group, p))
        return Measured(v, max(0.0, now - t))


def _sample_time(s: Sample, fresh_t: float | None) -> float:
    """When sample `s` was observed: the newest scrape of the model's series (from the freshness query)
    if known, else the evaluation time."""
    return s.timestamp if fresh_t is None else min(s.timestamp, fresh_t)
