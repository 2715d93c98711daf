"""`oracle` (protocol §4): perfect foresight of arrivals and of each replica's cold start.

`need[s]` is the number of ready replicas second s requires. Every second the oracle asks the fleet how
long a replica requested now would take to be ready (`Lifecycle.peek_ready_in`: the pre-drawn stage
durations and the cluster's free GPUs) and orders replicas exactly that long before they are needed; it
removes one when it is not needed again within the time it would take to bring it back (keeping an idle
replica for less than a cold start is cheaper than restarting it).

`need` starts as the arriving work (replica-equivalents, `scenario.demand_replicas`) averaged over 5 s at
85% utilisation, and is then raised where the replay still misses the SLO (`simulations.runner.run_oracle`),
until ≥ 99.9% of requests meet it. Its GPU-hours are the floor others are measured against.
"""

from __future__ import annotations

import math

import numpy as np

from simulations.autoscalers.base import Context


class Oracle:
    name = "oracle"
    interval_seconds = 1.0

    def __init__(self, need: np.ndarray, min_replicas: int = 1):
        self.need = np.maximum(np.asarray(need, dtype=np.int64), min_replicas)
        self.min_replicas = min_replicas

    def need_between(self, t0: float, t1: float) -> int:
        i0 = max(0, int(t0))
        i1 = min(len(self.need), math.ceil(t1) + 1)
        return int(self.need[i0:i1].max()) if i1 > i0 else self.min_replicas

    def initial_replicas(self, default: int) -> int:
        return max(self.min_replicas, self.need_between(0, 900))

    def tick(self, now: float, ctx: Context) -> int | None:
        fleet = ctx.fleet
        active = fleet.target
        lead = fleet.lifecycle.peek_ready_in(now)
        want = self.need_between(now + lead, now + lead + 1)
        if want > active:
            return want
        keep = self.need_between(now, now + lead + 1)
        if keep < active:
            return keep
        return active
