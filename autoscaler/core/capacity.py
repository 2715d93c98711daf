"""Capacity model: how much work one replica serves.

Work is measured in *replica-seconds at the prior*: a prompt-token rate P and a generation-token rate G
cost `P / promptTokensPerSecond + G / generationTokensPerSecond` replicas at the policy's prior. One
number for demand keeps forecasting and the decision simple; the learned capacity is a factor on the
prior. It is learned only while a queue exists: then, and only then, throughput equals capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.policy import CapacitySpec

MAX_SAMPLES = 64
MIN_SAMPLES = 5
PRIOR_WEIGHT = 5
# A real queue: this many sequences waiting per ready replica (vLLM counts a request as waiting until its
# first step, so a handful waiting is normal at any load; a queue that long is throughput-bound).
SATURATED_WAITING_PER_REPLICA = 4.0


def real_queue(waiting: float, ready: int) -> bool:
    """Whether `waiting` sequences are a real queue for `ready` replicas (SATURATED_WAITING_PER_REPLICA each)."""
    return waiting >= SATURATED_WAITING_PER_REPLICA * max(1, ready)


def work_rate(spec: CapacitySpec, prompt_tokens_per_s: float, generation_tokens_per_s: float) -> float:
    """Demand in replica-equivalents at the prior capacity."""
    return (
        prompt_tokens_per_s / spec.prompt_tokens_per_second
        + generation_tokens_per_s / spec.generation_tokens_per_second
    )


@dataclass(frozen=True, slots=True)
class CapacityStats:
    """Recent per-replica throughput samples taken while saturated (as factors of the prior)."""

    samples: tuple[float, ...] = ()

    def observe(self, spec: CapacitySpec, served_work: float, ready: int) -> CapacityStats:
        if not spec.learn or ready <= 0 or served_work <= 0:
            return self
        factor = served_work / ready
        # Throughput above 3× the prior or below a tenth of it is a measurement artefact, not capacity.
        if not 0.1 <= factor <= 3.0:
            return self
        return CapacityStats((*self.samples, factor)[-MAX_SAMPLES:])

    def measured(self, spec: CapacitySpec) -> float | None:
        """`factor` once enough samples were measured, else None: a prior is no measurement unless the policy
        says it is (`learn: false` takes the stated capacity as measured)."""
        if not spec.learn:
            return 1.0
        return self.factor(spec) if len(self.samples) >= MIN_SAMPLES else None

    def factor(self, spec: CapacitySpec) -> float:
        """Learned capacity as a factor of the prior: robust (median), shrunk to 1, and bounded."""
        if not spec.learn or len(self.samples) < MIN_SAMPLES:
            return 1.0
        ordered = sorted(self.samples)
        n = len(ordered)
        median = ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])
        w = PRIOR_WEIGHT / (PRIOR_WEIGHT + n)
        blended = w * 1.0 + (1 - w) * median
        return min(spec.learn_max_factor, max(spec.learn_min_factor, blended))
