"""The controller's own Prometheus metrics, on a registry of its own (plus the sources' registry)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.registry import Collector

from autoscaler.core import Decision

PREFIX = "inference_autoscaler"


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r, labels = self.registry, ("namespace", "policy")
        self.desired = Gauge(f"{PREFIX}_desired_replicas", "Replicas the last decision asked for", labels, registry=r)
        self.current = Gauge(f"{PREFIX}_current_replicas", "Target spec.replicas when last read", labels, registry=r)
        self.ready = Gauge(f"{PREFIX}_ready_replicas", "Ready pods of the target", labels, registry=r)
        self.forecast = Gauge(
            f"{PREFIX}_forecast_work_replicas",
            "Forecast demand over the lead time, in replica-equivalents at the prior capacity",
            labels,
            registry=r,
        )
        self.lead_time = Gauge(
            f"{PREFIX}_lead_time_seconds",
            "Expected cold start (high quantile) planned with",
            labels,
            registry=r,
        )
        self.decisions = Counter(f"{PREFIX}_decisions_total", "Decisions by reason", (*labels, "reason"), registry=r)
        self.scale_writes = Counter(
            f"{PREFIX}_scale_writes_total",
            "Replica changes written to targets",
            (*labels, "direction"),
            registry=r,
        )
        self.tick_seconds = Histogram(
            f"{PREFIX}_tick_duration_seconds",
            "Wall time of one reconcile tick",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )
        self.tick_policies = Gauge(f"{PREFIX}_tick_policies", "Policies reconciled in the last tick", registry=r)
        self.api_errors = Counter(
            f"{PREFIX}_kube_api_errors_total",
            "Kubernetes API errors by operation and code",
            ("operation", "code"),
            registry=r,
        )
        self.source_errors = Counter(
            f"{PREFIX}_metric_source_failures_total",
            "Ticks whose metric source raised instead of returning signals",
            registry=r,
        )
        self.policy_errors = Counter(
            f"{PREFIX}_policy_errors_total",
            "Failures contained to one policy (the policy is backed off; the others are reconciled)",
            (*labels, "stage", "error"),
            registry=r,
        )
        self.state_discarded = Counter(
            f"{PREFIX}_state_discarded_total",
            "Stored status.coreState documents that could not be used and were dropped",
            registry=r,
        )
        self.slow_policies = Counter(
            f"{PREFIX}_slow_policy_steps_total",
            "Policy steps still running when their tick phase ended (left to finish on their own)",
            registry=r,
        )
        self.invalid_policies = Gauge(f"{PREFIX}_invalid_policies", "Policies whose spec does not validate", registry=r)
        self.leader = Gauge(f"{PREFIX}_leader", "1 while this instance holds the leader lease", registry=r)

    def decided(self, namespace: str, policy: str, d: Decision, replicas: int, ready: int) -> None:
        """One decision of the policy's, on a target read at `replicas` with `ready` pods ready."""
        if d.desired_replicas is not None:
            self.desired.labels(namespace, policy).set(d.desired_replicas)
        self.current.labels(namespace, policy).set(replicas)
        self.ready.labels(namespace, policy).set(ready)
        self.lead_time.labels(namespace, policy).set(d.lead_time_seconds)
        if d.forecast_work is not None:
            self.forecast.labels(namespace, policy).set(d.forecast_work)
        self.decisions.labels(namespace, policy, d.reason.value).inc()

    def forget(self, namespace: str, policy: str) -> None:
        for g in (self.desired, self.current, self.ready, self.forecast, self.lead_time):
            with contextlib.suppress(KeyError):
                g.remove(namespace, policy)


class ChainedRegistry:
    """Expose several registries as one (ours and the metric sources' shared one)."""

    def __init__(self, registries: Iterable[CollectorRegistry]):
        self.registries = list(registries)

    def collect(self) -> Iterable[object]:
        for r in self.registries:
            yield from r.collect()


def as_collector(chain: ChainedRegistry) -> Collector:
    return chain  # type: ignore[return-value]
