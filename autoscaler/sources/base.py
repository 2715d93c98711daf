"""The one interface every metric source implements.

A source fills the load part of `Signals` (rates, sequences, KV use, latency quantiles, each with its
age, and the latency histograms the quantiles come from); the controller adds the replica counts,
cluster facts and cold-start observations it gets from the Kubernetes API. A source never turns a
failure into a zero: a value it could not get is `MISSING` (a histogram, None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from autoscaler.core.signals import LatencyHistogram, Measured, Signals
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.engines import SignalName


class MetricsSource(Protocol):
    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        """Signals for each policy, keyed by `policy.key` (namespace/name). One call serves one tick for
        all policies, so sources batch their queries (one PromQL query per signal, not per policy).
        Policies the source knows nothing about map to `Signals()` (all missing), never to zeros."""
        ...


def load_signals(values: Mapping[SignalName, Measured], base: Signals | None = None) -> Signals:
    """`base` (default: all missing) with the given load signals set; other fields are kept."""
    b = base if base is not None else Signals()
    g = values.get
    return replace(
        b,
        request_rate=g(SignalName.REQUEST_RATE, b.request_rate),
        prompt_tokens_rate=g(SignalName.PROMPT_TOKENS_RATE, b.prompt_tokens_rate),
        generation_tokens_rate=g(SignalName.GENERATION_TOKENS_RATE, b.generation_tokens_rate),
        running=g(SignalName.RUNNING, b.running),
        waiting=g(SignalName.WAITING, b.waiting),
        kv_cache_usage=g(SignalName.KV_CACHE_USAGE, b.kv_cache_usage),
        queue_time_p90_seconds=g(SignalName.QUEUE_TIME_P90, b.queue_time_p90_seconds),
        ttft_p90_seconds=g(SignalName.TTFT_P90, b.ttft_p90_seconds),
        prompt_tokens_p90=g(SignalName.PROMPT_TOKENS_P90, b.prompt_tokens_p90),
    )


def load_signal(signals: Signals, name: SignalName) -> Measured:
    """The load signal `name` of `signals`."""
    m: Measured = getattr(signals, name.value)
    return m


# The histogram behind each quantile signal, by the `Signals` field that carries it.
HISTOGRAM_FIELDS: dict[SignalName, str] = {
    SignalName.QUEUE_TIME_P90: "queue_time_histogram",
    SignalName.TTFT_P90: "ttft_histogram",
    SignalName.PROMPT_TOKENS_P90: "prompt_tokens_histogram",
}


def with_histograms(signals: Signals, histograms: Mapping[SignalName, LatencyHistogram | None]) -> Signals:
    """`signals` with the histograms of the given quantile signals set (None: unknown); others kept."""
    g = histograms.get
    return replace(
        signals,
        queue_time_histogram=g(SignalName.QUEUE_TIME_P90, signals.queue_time_histogram),
        ttft_histogram=g(SignalName.TTFT_P90, signals.ttft_histogram),
        prompt_tokens_histogram=g(SignalName.PROMPT_TOKENS_P90, signals.prompt_tokens_histogram),
    )


def load_histogram(signals: Signals, name: SignalName) -> LatencyHistogram | None:
    """The histogram behind quantile signal `name` of `signals`."""
    h: LatencyHistogram | None = getattr(signals, HISTOGRAM_FIELDS[name])
    return h
