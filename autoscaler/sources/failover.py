"""Prometheus first; the direct scrape for policies whose Prometheus queries failed (and that allow it
with `spec.metrics.fallbackToScrape`), and for policies that asked for `source: scrape`.

Each tick tries Prometheus again, so a policy returns to Prometheus as soon as it answers. Policies on
fallback merge field by field: a signal the scrape cannot give yet (a rate needs two scrapes) keeps
Prometheus's last good value with its growing age, whichever is fresher wins; latency histograms
likewise (the fresher present one), and pass through unchanged for policies on a single source.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from autoscaler.core.signals import LatencyHistogram, Measured, Signals
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.base import HISTOGRAM_FIELDS, load_histogram, load_signal, load_signals, with_histograms
from autoscaler.sources.engines import SignalName
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.scrape import ScrapeMetricsSource

log = logging.getLogger("autoscaler.sources.failover")


def fresher(a: Measured, b: Measured) -> Measured:
    """The value with the smaller age; a missing value never wins over a present one."""
    if a.value is None:
        return b
    if b.value is None:
        return a
    return a if a.age_seconds <= b.age_seconds else b


def fresher_histogram(a: LatencyHistogram | None, b: LatencyHistogram | None) -> LatencyHistogram | None:
    """The histogram with the smaller age; a missing one never wins over a present one."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a.age_seconds <= b.age_seconds else b


def merge(primary: Signals, secondary: Signals) -> Signals:
    """Field-wise `fresher` of the load signals and latency histograms; other fields come from
    `primary`."""
    best = {s: fresher(load_signal(primary, s), load_signal(secondary, s)) for s in SignalName}
    hists = {s: fresher_histogram(load_histogram(primary, s), load_histogram(secondary, s))
             for s in HISTOGRAM_FIELDS}
    return with_histograms(load_signals(best, primary), hists)


class FailoverMetricsSource:
    """`MetricsSource`: Prometheus with per-policy failover to the direct scrape and back."""

    name = "failover"

    def __init__(self, prometheus: PrometheusMetricsSource, scrape: ScrapeMetricsSource) -> None:
        self.prometheus = prometheus
        self.scrape = scrape
        self.telemetry = prometheus.telemetry
        self.on_scrape: frozenset[str] = frozenset()  # policies served by the scrape on the last tick

    @property
    def policy_errors(self) -> dict[str, str]:
        """Per-policy reasons the last collect could not query a policy at all (e.g. its Prometheus URL is
        not allowed): for the policy's status; such a policy is not moved to the scrape."""
        return self.prometheus.policy_errors

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        via_prom = [p for p in policies if p.spec.metrics.source == "prometheus"]
        direct = [p for p in policies if p.spec.metrics.source == "scrape"]
        out = self.prometheus.collect(via_prom, now) if via_prom else {}
        failed = self.prometheus.failed_policies
        fallback = [p for p in via_prom if p.key in failed and p.spec.metrics.fallback_to_scrape]
        if fallback:
            self.telemetry.failovers.inc(len(fallback))
        scraped = self.scrape.collect([*direct, *fallback], now) if (direct or fallback) else {}
        for p in direct:
            out[p.key] = scraped.get(p.key, Signals())
        for p in fallback:
            out[p.key] = merge(scraped.get(p.key, Signals()), out.get(p.key, Signals()))
        now_on = frozenset(p.key for p in fallback)
        if now_on - self.on_scrape:
            log.warning("Prometheus failing: %d policies now read by direct scrape (%s)",
                        len(now_on - self.on_scrape), ", ".join(sorted(now_on - self.on_scrape)[:5]))
        if self.on_scrape - now_on:
            log.info("Prometheus answering again: %d policies back from direct scrape",
                     len(self.on_scrape - now_on))
        self.on_scrape = now_on
        return out
