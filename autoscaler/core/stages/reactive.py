"""Reactive: replicas for current demand plus the backlog projected to when the replicas already starting
are ready, drained within the policy's drain time. Starting replicas thus count at their expected ready
time, and a queue that grows while they start does not make us order the same replicas again. With a
per-replica concurrency limit, also the replicas the running and waiting sequences need."""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.coldstart import ColdStartStats, LeadTime, remaining_seconds, stage_medians
from autoscaler.core.signals import ClusterFacts, ReplicaCounts
from autoscaler.core.stages.sizing import replicas_for
from autoscaler.policy import PolicySpec


@dataclass(frozen=True, slots=True)
class Reactive:
    replicas: int
    concurrency: int
    projected_backlog: float
    ready_in_seconds: float

    def explain(self) -> dict[str, float]:
        return {"projected_backlog_work": round(self.projected_backlog, 4)}


def ready_in(policy: PolicySpec, replicas: ReplicaCounts, coldstart: ColdStartStats, cluster: ClusterFacts,
             lead: LeadTime) -> float:
    """Seconds until the last schedulable starting replica is expected ready (a cold start if none is)."""
    active = [s for s in replicas.starting if not s.unschedulable]
    if not active:
        return lead.median_seconds
    medians = stage_medians(policy.cold_start, coldstart, cluster)
    return max(remaining_seconds(medians, s.stage, s.stage_age_seconds) for s in active)


def reactive(policy: PolicySpec, offered: float, backlog: float, waiting: float, running: float | None,
             ready_replicas: int, factor: float, usable: float, ready_in_seconds: float) -> Reactive:
    projected = max(0.0, backlog + (offered - ready_replicas * factor) * ready_in_seconds)
    drain = max(policy.scale_up.backlog_drain_seconds, policy.slo.queue_budget_seconds)
    wanted = replicas_for(offered + projected / drain, usable)
    cap = policy.capacity
    concurrency = 0
    if cap.max_concurrency is not None and running is not None:
        concurrency = replicas_for(max(0.0, running) + waiting, cap.max_concurrency * cap.target_utilization)
    return Reactive(wanted, concurrency, projected, ready_in_seconds)
