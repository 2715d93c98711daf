"""`ours`: the project's decision core, driven through the simulator's adapters. No logic of its own.

Signals: the load part from the metrics view (Prometheus with lags), replica counts by phase, cluster
facts and completed cold-start stages from the simulated scale target; `now` is unix seconds so the
policy's time-of-day floors apply to the trace's own dates.

Its frontier knob (`simulations.autoscalers.registry`) is `capacity.targetUtilization`: the share of a
replica's capacity the policy plans to use; `with_target_utilization` returns the policy with it changed.
Its one behaviour knob is the operator's floor, `replicas.min` (`with_min_replicas`): the capacity a
platform holds before bursts no forecast sees (`benchmarks/floor_frontier.py`).

With `spec.warmCapacity.enabled`, each tick sets the fleet's placeholder pool to the decision's `warm_slots`
within [minSlots, maxSlots] (`with_warm_pool` fixes it at N); the cluster facts tell the decision how many
slots are warm now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from autoscaler.core import CoreState, decide, forecast_config
from autoscaler.core.decide import Decision
from autoscaler.policy import PolicySpec, revised
from simulations.autoscalers.base import Context


def with_target_utilization(policy: PolicySpec, utilization: float) -> PolicySpec:
    """The policy with `capacity.targetUtilization` set (validated like the policy file's field)."""
    if not 0 < utilization <= 1:
        raise ValueError(f"targetUtilization must be within (0, 1], not {utilization:g}")
    return revised(policy, capacity={"target_utilization": utilization})


def with_min_replicas(policy: PolicySpec, minimum: int) -> PolicySpec:
    """The policy with `replicas.min` set (validated like the policy file's field: 0..replicas.max)."""
    if not 0 <= minimum <= policy.replicas.max:
        raise ValueError(f"replicas.min must be within 0..{policy.replicas.max} (replicas.max), not {minimum}")
    return revised(policy, replicas={"min": minimum})


def with_warm_pool(policy: PolicySpec, slots: int, weights_cache_path: str | None = None) -> PolicySpec:
    """The policy with warm capacity on and its pool held at `slots` (minSlots = maxSlots), or off for 0."""
    return revised(policy, warm_capacity={"enabled": slots > 0, "min_slots": slots, "max_slots": slots,
                                          "weights_cache_path": weights_cache_path})


class Ours:
    name = "ours"

    def __init__(self, policy: PolicySpec, interval_seconds: float | None = None,
                 on_decision: Callable[[float, Decision], None] | None = None, state: CoreState | None = None):
        self.policy = policy
        self.on_decision = on_decision  # called with (replay second, decision) every tick
        self.interval_seconds = interval_seconds or policy.interval_seconds
        self._fcfg = forecast_config(policy)
        # The core's memory to start from: empty, as on a fresh install, or what an earlier replay left (the
        # controller keeps it in the policy's status across restarts; benchmarks/steady_state.py).
        self.state = state if state is not None else CoreState()
        self.last_decision: object | None = None

    def initial_replicas(self, default: int) -> int:
        return max(self.policy.replicas.min, min(default, self.policy.replicas.max))

    def tick(self, now: float, ctx: Context) -> int | None:
        fleet = ctx.fleet
        signals = replace(
            ctx.view.signals(now),
            replicas=fleet.replica_counts(now),
            cluster=fleet.cluster_facts(now),
            observations=fleet.take_observations(now),
        )
        result = decide(self.policy, signals, self.state, ctx.start_epoch + now, self._fcfg)
        self.state = result.state
        self.last_decision = result.decision
        if self.on_decision is not None:
            self.on_decision(now, result.decision)
        if self.policy.warm_capacity.enabled:  # the placeholder pool, as the controller keeps it
            fleet.lifecycle.set_warm_slots(result.decision.warm_slots, now)
        return result.decision.desired_replicas
