"""PromQL for the signals, batched: one query per signal for every model that shares an engine, a
Prometheus and a label selector. The live source evaluates these with `/api/v1/query`, the backtest
with `/api/v1/query_range`, so both read the same numbers.

Series are summed `by (namespace, <model label>)`: across pods, and across a data-parallel engine's
per-engine series (vLLM's `engine` label), which are simply not in the `by` clause.

Latency histograms are fetched as bucket increases, `sum by (le, namespace, <model label>)
(increase(x_bucket[window]))`: one query per histogram gives both the histogram the core judges SLO
attainment on and, client-side, the p90 signal (`histogram.histogram_quantile` follows PromQL's
arithmetic), so the histograms cost no extra query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.engines import (
    QUANTILE,
    SIGNAL_KIND,
    EngineMetrics,
    MetricRef,
    SignalName,
    engine_metrics,
)

# Marks the per-model freshness query (newest sample time of the model's queue gauge).
FRESHNESS = "freshness"
# Backtest-only: how many replicas exposed the queue gauge (series counted per scrape instance).
REPLICAS = "replicas"

_RE2_SPECIAL = set("\\.+*?()|[]{}^$")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def promql_string(value: str) -> str:
    """A double-quoted PromQL string literal of `value`, whatever it holds: backslash, quote and every
    control character are escaped (PromQL strings take Go's escapes), so a value cannot end the string
    or the selector it is in."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    out = []
    for c in value:
        if c == "\\" or c == '"':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\x{ord(c):02x}")
        elif 0xD800 <= ord(c) <= 0xDFFF:  # a lone surrogate cannot be sent as UTF-8
            out.append("\\ufffd")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def bad_label_names(selector: Mapping[str, str]) -> list[str]:
    """The keys of a labelSelector that are not Prometheus label names (a label name cannot be quoted
    in a PromQL matcher on Prometheus 2, so such a key could only be pasted in raw: it is refused)."""
    return [k for k in selector if not _LABEL_NAME.fullmatch(k)]


def regex_literal(value: str) -> str:
    """`value` as an RE2 pattern matching exactly itself."""
    return "".join("\\" + c if c in _RE2_SPECIAL else c for c in value)


@dataclass(frozen=True, slots=True)
class GroupKey:
    """Policies that can share one query per signal."""

    url: str
    engine: str
    selector: tuple[tuple[str, str], ...]  # sorted labelSelector items


# What a planned query answers: one value per model, or one series per model and `le` bucket.
QueryShape = Literal["value", "buckets"]


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    group: GroupKey
    signal: str  # a SignalName value, FRESHNESS or REPLICAS
    promql: str
    # "buckets": per-`le` increases of the histogram behind a quantile signal (see `bucket_query`).
    shape: QueryShape = "value"


@dataclass(frozen=True, slots=True)
class QueryPlan:
    groups: dict[GroupKey, tuple[ModelScalingPolicy, ...]]
    queries: tuple[PlannedQuery, ...]


_DURATION = re.compile(r"([1-9][0-9]*)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration_seconds(window: str) -> float:
    """Seconds in a one-unit PromQL duration such as 30s, 1m or 2h (the rate window the controller takes);
    raises ValueError naming the accepted form."""
    m = _DURATION.fullmatch(window)
    seconds = float(m.group(1)) * _UNIT_SECONDS[m.group(2)] if m is not None else math.inf
    if not seconds < math.inf:
        raise ValueError(f"rate window {window[:40]!r} is not a PromQL duration such as 30s or 1m")
    return seconds


class PromQLBuilder:
    """Builds the queries. `namespace_label` is the label the scrape config puts the pod's namespace
    in (None: series carry no namespace and models are matched by name only); `window` is the
    rate()/histogram window, at least 4 scrape intervals."""

    def __init__(self, *, namespace_label: str | None = "namespace", window: str = "1m",
                 filter_models: bool = True) -> None:
        self.namespace_label = namespace_label
        self.window = window
        self.window_seconds = duration_seconds(window)
        self.filter_models = filter_models

    def by_labels(self, engine: EngineMetrics) -> tuple[str, ...]:
        return tuple(x for x in (self.namespace_label, engine.model_label) if x)

    def _selector(self, ref: MetricRef, suffix: str, matchers: Sequence[tuple[str, str, str]]) -> str:
        parts = [f"{k}={promql_string(v)}" for k, v in ref.matchers]
        parts += [f"{k}{op}{promql_string(v)}" for k, op, v in matchers]
        return f"{ref.name}{suffix}{{{','.join(parts)}}}" if parts else f"{ref.name}{suffix}"

    def _matchers(self, engine: EngineMetrics, selector: Iterable[tuple[str, str]],
                  models: Sequence[str]) -> list[tuple[str, str, str]]:
        out = [(k, "=", v) for k, v in selector]
        if self.filter_models and engine.model_label and models and engine.model_label not in dict(selector):
            names = sorted(set(models))
            if len(names) == 1:
                out.append((engine.model_label, "=", names[0]))
            else:
                out.append((engine.model_label, "=~", "|".join(regex_literal(m) for m in names)))
        return out

    @staticmethod
    def _agg(op: str, by: Sequence[str], expr: str) -> str:
        return f"{op} by ({', '.join(by)}) ({expr})" if by else f"{op}({expr})"

    def _each(self, refs: Sequence[MetricRef], op: str, by: Sequence[str], m: Sequence[tuple[str, str, str]],
              suffix: str = "", wrap: Callable[[str], str] = str) -> str:
        """`op by (by) (wrap(series))` for each name the engine may expose the metric under, joined by `or`
        (a server answers for the name it has)."""
        return " or ".join(self._agg(op, by, wrap(self._selector(r, suffix, m))) for r in refs)

    def signal_query(self, engine: EngineMetrics, signal: SignalName,
                     selector: Iterable[tuple[str, str]] = (), models: Sequence[str] = ()) -> str | None:
        """The query for one signal over all `models`, or None when the engine does not expose it."""
        refs = engine.refs(signal)
        if not refs:
            return None
        m = self._matchers(engine, tuple(selector), models)
        by = self.by_labels(engine)
        kind = SIGNAL_KIND[signal]
        w = self.window
        if kind == "rate":
            return self._each(refs, "sum", by, m, wrap=lambda s: f"rate({s}[{w}])")
        if kind in ("sum", "mean"):
            return self._each(refs, "sum" if kind == "sum" else "avg", by, m)
        inner = self._each(refs, "sum", ("le", *by), m, "_bucket", lambda s: f"rate({s}[{w}])")
        return f"histogram_quantile({QUANTILE}, {inner})"

    def bucket_query(self, engine: EngineMetrics, signal: SignalName,
                     selector: Iterable[tuple[str, str]] = (), models: Sequence[str] = ()) -> str | None:
        """Per-`le` increases over the window of the histogram behind quantile `signal`, for all `models`
        (None when the engine has no such histogram). Same selectors and `or` alternatives as
        `signal_query`; `histogram_quantile` of its answer is `signal_query`'s answer."""
        refs = engine.refs(signal)
        if not refs or SIGNAL_KIND[signal] != "quantile":
            return None
        m = self._matchers(engine, tuple(selector), models)
        by = ("le", *self.by_labels(engine))
        w = self.window
        return self._each(refs, "sum", by, m, "_bucket", lambda s: f"increase({s}[{w}])")

    def freshness_query(self, engine: EngineMetrics, selector: Iterable[tuple[str, str]] = (),
                        models: Sequence[str] = ()) -> str | None:
        """Newest sample time (unix seconds) of each model's queue gauge: the age of every signal."""
        refs = engine.refs(SignalName.WAITING) or engine.refs(SignalName.RUNNING)
        if not refs:
            return None
        m = self._matchers(engine, tuple(selector), models)
        by = self.by_labels(engine)
        return self._each(refs, "max", by, m, wrap=lambda s: f"timestamp({s})")

    def replicas_query(self, engine: EngineMetrics, selector: Iterable[tuple[str, str]] = (),
                       models: Sequence[str] = ()) -> str | None:
        """Replicas that exposed metrics: one per scrape `instance` (DP engines counted once)."""
        refs = engine.refs(SignalName.WAITING) or engine.refs(SignalName.RUNNING)
        if not refs:
            return None
        m = self._matchers(engine, tuple(selector), models)
        by = self.by_labels(engine)
        per_instance = [self._agg("count", (*by, "instance"), self._selector(r, "", m)) for r in refs]
        return " or ".join(self._agg("count", by, x) for x in per_instance)

    def pod_inflight_query(self, engine: EngineMetrics, p: ModelScalingPolicy, pod_label: str = "pod",
                           freshness: bool = False) -> str | None:
        """In-flight requests (running + waiting) of each of policy `p`'s pods, `sum by (pod)`: e.g. for vLLM
        `sum by (pod) (vllm:num_requests_running{...}) + sum by (pod) (vllm:num_requests_waiting{...})`.
        A pod that exposes only one of the two has no answer (unknown, never a smaller number). None when
        the engine exposes neither gauge. `freshness`: instead, the newest sample time of each pod's running
        gauge (`max by (pod) (timestamp(...))`)."""
        running, waiting = engine.refs(SignalName.RUNNING), engine.refs(SignalName.WAITING)
        if not running or not waiting:
            return None
        m = self._matchers(engine, tuple(sorted(p.spec.metrics.label_selector.items())), [p.spec.model.name])
        if self.namespace_label:
            m.append((self.namespace_label, "=", p.metadata.namespace))
        by = (pod_label,)
        if freshness:
            return self._each(running, "max", by, m, wrap=lambda s: f"timestamp({s})")
        parts = [self._each(refs, "sum", by, m) for refs in (running, waiting)]
        return f"({parts[0]}) + ({parts[1]})"

    def plan(self, policies: Sequence[ModelScalingPolicy], default_url: str,
             extra: Sequence[str] = (FRESHNESS,)) -> QueryPlan:
        """Group policies by (Prometheus URL, engine, labelSelector) and list one query per signal per
        group (a quantile signal's query is its histogram's `bucket_query`). `extra` adds FRESHNESS and/or
        REPLICAS queries."""
        groups: dict[GroupKey, list[ModelScalingPolicy]] = {}
        for p in policies:
            bad = bad_label_names(p.spec.metrics.label_selector)
            if bad:
                raise ValueError(f"{p.key}: spec.metrics.labelSelector key {bad[0][:100]!r} is not a "
                                 f"Prometheus label name")
            url = (p.spec.metrics.prometheus.url or default_url).rstrip("/")
            key = GroupKey(url, p.spec.model.engine, tuple(sorted(p.spec.metrics.label_selector.items())))
            groups.setdefault(key, []).append(p)
        queries: list[PlannedQuery] = []
        for key, members in groups.items():
            engine = engine_metrics(key.engine)
            models = [p.spec.model.name for p in members]
            for s in SignalName:
                if SIGNAL_KIND[s] == "quantile":
                    q = self.bucket_query(engine, s, key.selector, models)
                    if q is not None:
                        queries.append(PlannedQuery(key, s.value, q, "buckets"))
                    continue
                q = self.signal_query(engine, s, key.selector, models)
                if q is not None:
                    queries.append(PlannedQuery(key, s.value, q))
            for e in extra:
                build = self.freshness_query if e == FRESHNESS else self.replicas_query
                q = build(engine, key.selector, models)
                if q is not None:
                    queries.append(PlannedQuery(key, e, q))
        return QueryPlan({k: tuple(v) for k, v in groups.items()}, tuple(queries))

    def series_key(self, engine: EngineMetrics, labels: Mapping[str, str]) -> tuple[str, str]:
        """(namespace, model) of one result series; "" where the label is absent."""
        ns = labels.get(self.namespace_label, "") if self.namespace_label else ""
        model = labels.get(engine.model_label, "") if engine.model_label else ""
        return ns, model

    def policy_keys(self, engine: EngineMetrics, p: ModelScalingPolicy) -> tuple[tuple[str, str], ...]:
        """Series keys that answer for policy `p`, most specific first: its namespace and model, then
        the model in series without a namespace label."""
        model = p.spec.model.name if engine.model_label else ""
        return ((p.metadata.namespace, model), ("", model))
