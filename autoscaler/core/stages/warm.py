"""Warm capacity: how many placeholder pods (spec.warmCapacity) to keep holding GPUs.

A warm slot pays off for demand that arrives before a replica ordered now could be ready the cold way (a new
node, the image pulled, the weights downloaded). The same reasoning that sizes the fleet ahead (predictive:
the forecast at the policy's quantile one high-quantile cold start ahead) sizes the pool, one step further
out on the band: the replicas the forecast's burst quantile (BURST_QUANTILE, never below the policy's own)
over one cold-path lead time would need, beyond the replicas the decision already has or is starting. That
gap is the rise the fleet could not meet in time without warm slots.

Clamped to [minSlots, maxSlots], and to what replicas.max still lets a replica use (a slot no replica may
preempt is only cost). 0 when warm capacity is off. Without a forecast (forecast.enabled: false) there is no
band to size from: the pool is minSlots. A tick that cannot trust its signals never shrinks the pool below
the placeholders running now (as the fleet is never scaled down on unknown data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from autoscaler.core.coldstart import ColdStartStats, lead_time
from autoscaler.core.signals import ClusterFacts
from autoscaler.core.stages.predictive import MAX_HORIZON_SECONDS
from autoscaler.core.stages.sizing import replicas_for
from autoscaler.policy import PolicySpec
from forecasting import ForecastConfig, ForecastState, predict

# The rise the pool is sized for: the forecast band's 99th percentile (a one-in-a-hundred rise over the
# lead time), or the policy's forecast quantile when that is higher.
BURST_QUANTILE = 0.99


@dataclass(frozen=True, slots=True)
class Warm:
    slots: int
    burst_work: float | None  # demand (replica work units) at the burst quantile over the horizon
    horizon_seconds: float  # the cold-path lead time (high quantile) the burst is forecast over

    def explain(self) -> dict[str, float]:
        out = {"warm_slots": float(self.slots)}
        if self.burst_work is not None:
            out["warm_burst_work"] = round(self.burst_work, 4)
            out["warm_horizon_s"] = round(self.horizon_seconds, 1)
        return out


def cold_lead_seconds(policy: PolicySpec, stats: ColdStartStats, cluster: ClusterFacts) -> float:
    """High-quantile lead time of a replica that finds no warm slot."""
    return lead_time(policy.cold_start, stats, replace(cluster, warm_slots=None)).high_seconds


OFF = Warm(0, None, 0.0)


def warm(policy: PolicySpec, config: ForecastConfig, forecast: ForecastState | None, offered: float,
         usable: float, stats: ColdStartStats, cluster: ClusterFacts, fleet: int, trusted: bool = True) -> Warm:
    """Placeholders to keep. `fleet`: the replicas the decision keeps (ready or starting); `cluster.warm_slots`:
    the placeholders running now; `trusted`: every signal of the tick was usable."""
    w = policy.warm_capacity
    if not w.enabled:
        return OFF
    cold_lead_high = cold_lead_seconds(policy, stats, cluster)
    horizon = cold_lead_high if 0.0 <= cold_lead_high <= MAX_HORIZON_SECONDS else MAX_HORIZON_SECONDS
    burst: float | None = None
    need = 0
    if policy.forecast.enabled and forecast is not None:
        q = max(BURST_QUANTILE, policy.forecast.quantile)
        fc = predict(config, forecast, horizon, (q,))
        burst = max(offered if math.isfinite(offered) else 0.0, fc.quantiles.get(q, fc.point))
        usable_room = max(0, policy.replicas.max - max(0, fleet))
        need = min(usable_room, max(0, replicas_for(burst, usable) - max(0, fleet)))
    if not trusted:
        need = max(need, cluster.warm_slots or 0)
    return Warm(min(w.max_slots, max(w.min_slots, need)), burst, horizon)


def held(policy: PolicySpec, cluster: ClusterFacts) -> Warm:
    """Demand unknown: keep the placeholders running now (within [minSlots, maxSlots]), never fewer."""
    w = policy.warm_capacity
    if not w.enabled:
        return OFF
    return Warm(min(w.max_slots, max(w.min_slots, cluster.warm_slots or 0)), None, 0.0)
