"""Per-pod in-flight requests (running + waiting) for one policy, from whichever source serves it: the
direct scrape's last answer of each pod, or one `sum by (pod)` Prometheus query. Used to choose which
replicas a scale-down removes (`autoscaler.core.victims`); never for the decision itself.

An answer older than `max_age_seconds`, a failed query or a pod the source does not know is None
(unknown), never 0: an unknown pod must never look idle.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from autoscaler.core.signals import Measured
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.prom_api import SourceError
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.scrape import ScrapeMetricsSource

log = logging.getLogger("autoscaler.sources.per_pod")


def _find(source: object, kind: type) -> object | None:
    """`source` itself or the source of that type it wraps (RoutedSource -> failover -> prometheus/scrape)."""
    if isinstance(source, kind):
        return source
    for attr in ("failover", "prometheus", "scrape"):
        inner = getattr(source, attr, None)
        if inner is not None and inner is not source:
            found = _find(inner, kind)
            if found is not None:
                return found
    return None


def pod_inflight(
    source: object,
    policy: ModelScalingPolicy,
    pods: Mapping[str, str | None],
    now: float,
    max_age_seconds: float,
) -> dict[str, float | None]:
    """In-flight requests per pod name (`pods`: name -> pod IP or None). Prometheus first when the policy
    reads Prometheus, then the scrape source's last answer for the pods Prometheus did not answer."""
    out: dict[str, float | None] = dict.fromkeys(pods)
    prom = _find(source, PrometheusMetricsSource)
    if isinstance(prom, PrometheusMetricsSource) and _reads_prometheus(source, prom, policy):
        try:
            answer = prom.pod_inflight(policy, now, max_age_seconds)
        except SourceError as e:
            log.info("per-pod in-flight of %s from Prometheus failed: %s", policy.key, e)
            answer = {}
        for name in pods:
            if name in answer:
                out[name] = _fresh(answer[name], max_age_seconds)
    scrape = _find(source, ScrapeMetricsSource)
    if isinstance(scrape, ScrapeMetricsSource):
        for name, address in pods.items():
            if out[name] is None and address:
                out[name] = _fresh(scrape.pod_inflight(policy, address, now), max_age_seconds)
    return out


def _reads_prometheus(source: object, prom: PrometheusMetricsSource, policy: ModelScalingPolicy) -> bool:
    """Whether the policy's signals came from Prometheus this tick: it asks for Prometheus, there is one to
    ask (the controller's default URL or the policy's own), and its queries did not fail (then the scrape
    fallback served it, and serves the per-pod numbers too)."""
    if policy.spec.metrics.source != "prometheus" or policy.key in prom.failed_policies:
        return False
    return bool(policy.spec.metrics.prometheus.url) or getattr(source, "has_default_url", True) is not False


def _fresh(m: Measured, max_age_seconds: float) -> float | None:
    return m.fresh(max_age_seconds)
