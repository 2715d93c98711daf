"""Candidates: what each sizing stage asks for this tick, before bounds, stabilization and rate limits.

demand → capacity → predictive → hedge → reactive → burst (and its hold) → panic → held queue, each a
pure stage of autoscaler/core/stages/ returning its value and its part of the explanation. A backlog the
engines hold caps the reactive drain and the hedge, and ends a panic (stages/held_queue.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autoscaler.core.coldstart import LeadTime
from autoscaler.core.signals import ReplicaCounts, Signals
from autoscaler.core.stages.burst import Burst, BurstHold, burst, hold
from autoscaler.core.stages.capacity import Capacity, Learned, Load, capacity
from autoscaler.core.stages.demand import Demand, demand, queue_stood
from autoscaler.core.stages.hedge import Hedge, bursting, hedge
from autoscaler.core.stages.held_queue import HeldQueue, held_queue, idle_beside_backlog
from autoscaler.core.stages.panic import Panic, panic
from autoscaler.core.stages.predictive import Predictive, predictive
from autoscaler.core.stages.reactive import Reactive, reactive, ready_in
from autoscaler.core.stages.readings import Readings
from autoscaler.core.stages.slo_feedback import prefill_bound
from autoscaler.core.state import CoreState
from autoscaler.policy import PolicySpec
from forecasting import ForecastConfig


@dataclass(frozen=True, slots=True)
class Candidates:
    demand: Demand
    capacity: Capacity
    predictive: Predictive
    hedge: Hedge
    reactive: Reactive
    burst: Burst
    burst_hold: BurstHold
    panic: Panic
    held_queue: HeldQueue

    def asks(self, floor: int) -> dict[str, int]:
        """Replicas each candidate asks for, by the name `binding` reports."""
        return {"predictive": self.predictive.replicas, "burst": self.burst_hold.replicas,
                "hedge": self.hedge.replicas, "reactive": self.reactive.replicas,
                "concurrency": self.reactive.concurrency, "floor": floor}

    def explain(self) -> dict[str, float]:
        return {**self.demand.explain(), **self.reactive.explain(), **self.capacity.explain(),
                **self.predictive.explain(), **self.hedge.explain(), **self.burst.explain(),
                **self.burst_hold.explain(), **self.held_queue.explain(),
                "reactive": self.reactive.replicas, "concurrency": self.reactive.concurrency}


def candidates(policy: PolicySpec, signals: Signals, replicas: ReplicaCounts, state: CoreState, r: Readings,
               lead: LeadTime, cfg: ForecastConfig, now: float, since_last_tick: float) -> Candidates:
    """Every sizing stage in turn, each fed what the ones before it found."""
    ready, trusted = replicas.ready, not r.unknown
    dm = demand(policy, r, state.work_per_request, state.recent_waiting, state.last_growth, now,
                signals.rate_window(), ready)
    # Service beside a backlog the engines hold (or on their way to it) is no throughput sample.
    idle = trusted and idle_beside_backlog(policy, dm, ready, r.kv_cache_usage, state.capacity)
    load = Load(dm.served, dm.waiting, dm.backlog, dm.offered, r.kv_cache_usage, r.running,
                queue_held=state.held_queue or idle,
                queue_stood=queue_stood(dm.recent, now, policy.interval_seconds, signals.rate_window(), ready))
    cp = capacity(policy, signals, replicas, load, Learned.of(state), learn=trusted, since_last_tick=since_last_tick,
                  now=now)
    pr = predictive(policy, cfg, state.forecast, state.forecast_step_seconds,
                    state.forecast_seed, state.forecast_cache, now, dm.offered, cp.usable, lead.high_seconds)
    hg = hedge(pr.forecast, policy.forecast.step_seconds, lead.high_seconds, policy.slo.quantile, dm.offered,
               cp.usable, state.hedge_cache, bursting(dm.waiting, ready, r.queue_time_p90_seconds, policy))
    re = reactive(policy, dm.offered, dm.backlog, dm.waiting, r.running, ready, cp.throughput, cp.usable,
                  ready_in(policy, replicas, state.coldstart, signals.cluster, lead))
    bu = burst(policy, signals.queue_time_histogram, trusted, ready, dm.served, cp.usable, cp.steady_since, now)
    bh = hold(state.burst_held, now, bu.replicas, replicas, lead.high_seconds)
    # TTFT over the SLO while nothing queues is prefill, which more replicas do not shorten: no panic on it.
    ttft_p90 = None if prefill_bound(policy, signals, policy.metrics.staleness_seconds) else r.ttft_p90_seconds
    pn = panic(policy, r.queue_time_p90_seconds, ttft_p90, state.panic_until, now)
    # A backlog the engines hold is not drained by more replicas: what the fleet serves now is the need.
    hq = held_queue(policy, dm, replicas, r.kv_cache_usage, cp.stats, cp.usable, r.queue_time_p90_seconds,
                    state.held_queue, trusted=trusted)
    if hq.active:
        re = replace(re, replicas=min(re.replicas, hq.cap))
        hg = replace(hg, replicas=min(hg.replicas, hq.cap))
        pn = replace(pn, active=False)
    return Candidates(dm, cp, pr, hg, re, bu, bh, pn, hq)
