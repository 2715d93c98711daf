"""Capacity: the work one replica should carry this tick.

Learned capacity (a factor on the prior, learned only while saturated: a queue, or the KV cache full)
times the planned utilization, which the SLO feedback lowers after misses and raises while the SLO
holds with margin; never planned past 95% of what a replica can serve.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.capacity import CapacityStats
from autoscaler.core.signals import ReplicaCounts, Signals
from autoscaler.core.stages.slo_feedback import load_factor, slo_attainment
from autoscaler.policy import PolicySpec

MAX_PLANNED_UTILIZATION = 0.95
SATURATED_KV = 0.95


@dataclass(frozen=True, slots=True)
class Capacity:
    stats: CapacityStats  # learned per-replica throughput samples
    factor: float  # learned capacity as a factor of the prior
    load_factor: float  # SLO feedback (>1: plan less load per replica)
    usable: float  # work one replica should carry
    settled_since: float | None  # since when nothing has been starting and no queue waited

    def explain(self) -> dict[str, float]:
        return {"capacity_factor": round(self.factor, 4), "load_factor": round(self.load_factor, 4)}


def capacity(policy: PolicySpec, signals: Signals, replicas: ReplicaCounts, served: float, waiting: float,
             kv: float | None, learn: bool, previous: CapacityStats, previous_load_factor: float,
             previous_settled_since: float | None, since_last_tick: float, now: float) -> Capacity:
    cap = policy.capacity
    saturated = waiting >= 1.0 or (kv is not None and kv >= SATURATED_KV)
    stats = previous.observe(cap, served, replicas.ready) if saturated and learn else previous
    factor = stats.factor(cap)
    settled = not replicas.starting and replicas.ready >= replicas.desired and waiting < 1.0
    # A start in the future means the clock went backwards: settled from now on.
    settled_since = None
    if settled:
        settled_since = min(previous_settled_since, now) if previous_settled_since is not None else now
    attained = slo_attainment(policy, signals, policy.metrics.staleness_seconds) if cap.slo_feedback.enabled else None
    lf = load_factor(policy, attained, previous_load_factor, since_last_tick,
                     now - settled_since if settled_since is not None else 0.0)
    usable = factor * min(MAX_PLANNED_UTILIZATION, cap.target_utilization / lf)
    return Capacity(stats, factor, lf, usable, settled_since)
