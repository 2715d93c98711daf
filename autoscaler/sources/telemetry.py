"""The metric sources' own metrics and failure log.

Every failure mode is counted in `inference_autoscaler_metric_source_errors_total{source, kind}`, and
logged once per episode: a warning when a source starts failing, an info line when it recovers, nothing
on the ticks in between (a dead Prometheus must not write a line per model per tick).

`REGISTRY` is the registry the controller exposes on its own /metrics; tests pass their own.
"""

from __future__ import annotations

import logging
import threading
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Histogram

log = logging.getLogger("autoscaler.sources")

REGISTRY = CollectorRegistry(auto_describe=True)

SourceName = Literal["prometheus", "scrape", "failover"]

# Error kinds, so dashboards can tell a network problem from a broken exporter.
ErrorKind = Literal[
    "connect",  # connection refused / DNS / reset
    "timeout",  # connect/read timeout or the total deadline (slow-loris)
    "http_status",  # a non-2xx answer
    "auth",  # a credential the client could not read (the bearer token file); a 401/403 is http_status
    "bad_payload",  # not JSON, not the Prometheus envelope, or an error status inside it
    "too_large",  # a response over the size cap
    "parse_error",  # exposition text that does not parse
    "non_finite",  # NaN or ±Inf where a number was needed
    "negative",  # a negative rate, gauge or quantile
    "duplicate_series",  # two answers for one model in one query
    "implausible",  # a finite value outside the signal's physical bounds (1e308 waiting, KV use > 1)
    "url_not_allowed",  # a policy's Prometheus URL is not in the controller's allow-list
    "bad_selector",  # a policy's labelSelector key is not a Prometheus label name
    "absent",  # a policy's own query (scaleFromZero.query) answered no series: unknown, not zero
    "no_prometheus",  # a policy's own query has no Prometheus to go to (no --prometheus-url, no policy URL)
    "unexpected",  # any other failure of one query or pod (a bug): contained and counted, not raised
]


class SourceTelemetry:
    """Counters plus the once-per-episode log. One instance per registry (see `telemetry_for`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.errors = Counter(
            "inference_autoscaler_metric_source_errors_total",
            "Failures while collecting engine metrics, by source and kind.",
            ["source", "kind"],
            registry=registry,
        )
        self.requests = Counter(
            "inference_autoscaler_metric_source_requests_total",
            "HTTP requests made by the metric sources (PromQL queries, pod scrapes).",
            ["source"],
            registry=registry,
        )
        self.failovers = Counter(
            "inference_autoscaler_metric_source_failovers_total",
            "Ticks on which a policy's metrics came from the direct scrape because Prometheus failed.",
            registry=registry,
        )
        self.collect_seconds = Histogram(
            "inference_autoscaler_metric_source_collect_seconds",
            "Wall time of one collect() for all policies.",
            ["source"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
            registry=registry,
        )
        self._failing: dict[str, str] = {}
        self._lock = threading.Lock()

    def error(self, source: SourceName, kind: ErrorKind, n: int = 1) -> None:
        if n > 0:
            self.errors.labels(source=source, kind=kind).inc(n)

    def episode(self, name: str, failure: str | None) -> None:
        """Report the outcome of one attempt for `name` (a source, or source+target). Logs only on
        transitions: healthy -> failing (warning, with the first reason) and failing -> healthy."""
        with self._lock:
            was = self._failing.get(name)
            if failure is not None and was is None:
                self._failing[name] = failure
                log.warning("metric source %s failing: %s (logged once until it recovers)", name, failure)
            elif failure is None and was is not None:
                del self._failing[name]
                log.info("metric source %s recovered (was failing: %s)", name, was)

    def failing(self, name: str) -> bool:
        with self._lock:
            return name in self._failing


_by_registry: dict[int, tuple[CollectorRegistry, SourceTelemetry]] = {}
_by_registry_lock = threading.Lock()


def telemetry_for(registry: CollectorRegistry | None = None) -> SourceTelemetry:
    """The telemetry registered on `registry` (default: the module's `REGISTRY`), created once: a
    prometheus_client metric name can be registered only once per registry."""
    reg = registry if registry is not None else REGISTRY
    with _by_registry_lock:
        hit = _by_registry.get(id(reg))
        if hit is None or hit[0] is not reg:
            hit = (reg, SourceTelemetry(reg))
            _by_registry[id(reg)] = hit
        return hit[1]
