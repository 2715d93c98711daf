"""The one interface every metric source implements.

A source fills the load part of `Signals` (rates, sequences, KV use, latency quantiles, each with its
age); the controller adds the replica counts, cluster facts and cold-start observations it gets from
the Kubernetes API. A source never turns a failure into a zero: a value it could not get is `MISSING`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from autoscaler.core.signals import Signals
from autoscaler.policy import ModelScalingPolicy


class MetricsSource(Protocol):
    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        """Signals for each policy, keyed by `policy.key` (namespace/name). One call serves one tick for
        all policies, so sources batch their queries (one PromQL query per signal, not per policy).
        Policies the source knows nothing about map to `Signals()` (all missing), never to zeros."""
        ...
