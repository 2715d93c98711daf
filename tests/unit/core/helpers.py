"""Builders for policies and signals used by the core's tests."""

from __future__ import annotations

from typing import Any

from autoscaler.core import Measured, ReplicaCounts, Signals, StartingReplica
from autoscaler.core.engine_knee import EngineKnee
from autoscaler.core.slo_budget import SloBudget
from autoscaler.core.slo_capacity import SloCapacity
from autoscaler.core.stages.capacity import Capacity, Learned, Load, capacity
from autoscaler.policy import PolicySpec

BASE: dict[str, Any] = {
    "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m"},
    "model": {"name": "m"},
    "replicas": {"min": 1, "max": 50},
    "capacity": {"promptTokensPerSecond": 10000, "generationTokensPerSecond": 1000, "targetUtilization": 1.0,
                 "learn": False},
    "coldStart": {"schedulingSeconds": 2, "nodeProvisioningSeconds": 100, "imagePullSeconds": 0,
                  "weightLoadSeconds": 20, "warmupSeconds": 60, "learn": False},
    "forecast": {"enabled": False},
}


def policy(**overrides: Any) -> PolicySpec:
    spec = {**BASE}
    for key, value in overrides.items():
        spec[key] = {**spec.get(key, {}), **value} if isinstance(value, dict) else value
    return PolicySpec.model_validate(spec)


def signals(
    *,
    work: float,
    desired: int,
    ready: int | None = None,
    waiting: float = 0.0,
    starting: tuple[StartingReplica, ...] = (),
    age: float = 5.0,
    request_rate: float | None = None,
    queue_p90: float | None = None,
) -> Signals:
    """Signals whose demand is `work` replica-equivalents (prompt tokens only, at 10k tokens/s)."""
    return Signals(
        request_rate=Measured(request_rate if request_rate is not None else work * 10, age),
        prompt_tokens_rate=Measured(work * 10000.0, age),
        generation_tokens_rate=Measured(0.0, age),
        running=Measured(0.0, age),
        waiting=Measured(waiting, age),
        kv_cache_usage=Measured(0.3, age),
        queue_time_p90_seconds=Measured(queue_p90, age) if queue_p90 is not None else Measured(),
        replicas=ReplicaCounts(desired=desired, ready=desired if ready is None else ready, starting=starting),
    )


def capacity_stage(engine: EngineKnee, steady: float | None = None, running: float | None = None,
                   sig: Signals | None = None, slo: SloCapacity | None = None, budget: SloBudget | None = None,
                   offered: float = 0.0) -> Capacity:
    """The capacity stage on one learning tick of 4 ready replicas (target utilization 1.0) with this
    engine evidence and these SLO bins."""
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    return capacity(pol, sig or Signals(), ReplicaCounts(desired=4, ready=4),
                    Load(2.0, 0.0, 0.0, offered, 0.3, running, queue_stood=True),
                    Learned(slo=slo or SloCapacity(), engine=engine, steady_since=steady,
                            budget=budget or SloBudget()), learn=True, since_last_tick=15.0, now=1000.0)
