"""The metric source the controller runs with, built from the real sources in `autoscaler.sources`.

- Policies with `metrics.source: prometheus` use Prometheus (the policy's URL, else `--prometheus-url`),
  falling back per policy to scraping the target's ready pods when Prometheus fails.
- Without `--prometheus-url`, policies that name no Prometheus URL are scraped directly.
- A policy with `scaleFromZero` also gets its own query's answer (the demand in front of the engines) from
  its Prometheus, whichever source its engine metrics came from.
The scrape source learns pod addresses from the controller (the target's ready pods at the last tick).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from prometheus_client import CollectorRegistry

from autoscaler.core.signals import Signals
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.base import MetricsSource
from autoscaler.sources.failover import FailoverMetricsSource
from autoscaler.sources.front_door import FrontDoorSource
from autoscaler.sources.prom_auth import PromAuth
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.promql import PromQLBuilder
from autoscaler.sources.scrape import ScrapeMetricsSource
from autoscaler.sources.telemetry import REGISTRY

_NO_DEFAULT = "http://prometheus-url-not-configured.invalid"


class RoutedSource:
    def __init__(self, failover: FailoverMetricsSource, scrape: ScrapeMetricsSource, has_default_url: bool,
                 front_door: FrontDoorSource | None = None):
        self.failover, self.scrape, self.has_default_url = failover, scrape, has_default_url
        self.front_door = front_door or FrontDoorSource(failover.prometheus, has_default_url)

    @property
    def policy_errors(self) -> dict[str, str]:
        """Per policy, why the last collect could not query it at all (a Prometheus URL not on the
        allow-list, a label selector PromQL cannot carry, a scaleFromZero query with no Prometheus to go to):
        the reconciler puts it in the status."""
        return {**self.front_door.policy_errors, **self.failover.policy_errors}

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        if self.has_default_url:
            out = self.failover.collect(policies, now)
        else:
            via_prom = [p for p in policies
                        if p.spec.metrics.source == "prometheus" and p.spec.metrics.prometheus.url]
            rest = [p for p in policies if p not in via_prom]
            out = self.failover.collect(via_prom, now) if via_prom else {}
            if rest:
                out.update(self.scrape.collect(rest, now))
        for key, m in self.front_door.collect(policies, now).items():
            out[key] = replace(out.get(key, Signals()), front_door=m)
        return out


def build_source(prometheus_url: str | None, pod_addresses: Callable[[str], list[str]],
                 rate_window: str = "1m", allowed_prometheus_urls: Sequence[str] = (),
                 prometheus_auth: PromAuth | None = None) -> MetricsSource:
    """`allowed_prometheus_urls`: the URLs a policy's own `spec.metrics.prometheus.url` may name, besides
    `prometheus_url` (any other is refused for that policy: the controller sends no request there).
    `prometheus_auth` applies to every one of them."""
    builder = PromQLBuilder(window=rate_window)  # raises ValueError naming the accepted form
    # Both sources read their rates over the same window, so a failover changes no signal's meaning.
    scrape = ScrapeMetricsSource(lambda policy: pod_addresses(policy.key), window_seconds=builder.window_seconds)
    allowed = [*allowed_prometheus_urls, *([prometheus_url] if prometheus_url else [])]
    prom = PrometheusMetricsSource(prometheus_url or _NO_DEFAULT, builder=builder, allowed_urls=allowed,
                                   auth=prometheus_auth)
    return RoutedSource(FailoverMetricsSource(prom, scrape), scrape, bool(prometheus_url))


def source_registry() -> CollectorRegistry:
    """The registry the sources count their queries and errors on (exposed on the controller's /metrics)."""
    return REGISTRY
