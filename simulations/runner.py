"""One replay: a workload, a fleet, the metrics view and one autoscaler on a simulated clock.

The loop jumps from event to event of the control plane (scrapes every 15 s, the autoscaler's ticks);
between them the fleet advances on its own events (request-level) or bins (fluid).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from simulations.autoscalers.base import Autoscaler, Context
from simulations.autoscalers.oracle import Oracle
from simulations.fleet import RequestFleet
from simulations.fluid import FluidFleet
from simulations.metrics_view import MetricsView
from simulations.outcome import Outcome
from simulations.scenario import Scenario, demand_replicas, start_epoch
from simulations.trace import BinnedWorkload, Trace

SCRAPE_INTERVAL_SECONDS = 15.0
RATE_WINDOW_SECONDS = 60.0
DRAIN_SECONDS = 600.0
ORACLE_TARGET = 0.999
ORACLE_MAX_ROUNDS = 12


@dataclass
class RunResult:
    policy: str
    setting: str  # e.g. "target=8"
    outcome: Outcome
    wall_seconds: float
    series_t: np.ndarray = field(repr=False)
    series_ready: np.ndarray = field(repr=False)
    series_desired: np.ndarray = field(repr=False)
    ttft_t: np.ndarray = field(repr=False)
    ttft_p90: np.ndarray = field(repr=False)
    missed_arrivals: np.ndarray | None = field(default=None, repr=False)  # arrival seconds over the SLO

    @property
    def label(self) -> str:
        return f"{self.policy}({self.setting})" if self.setting else self.policy

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "setting": self.setting, "wall_seconds": round(self.wall_seconds, 3),
                **self.outcome.to_dict()}


def make_fleet(scenario: Scenario, workload: Trace | BinnedWorkload, initial: int) -> RequestFleet | FluidFleet:
    if isinstance(workload, Trace):
        return RequestFleet(workload, scenario.serving, scenario.cold_start_profile, scenario.cluster,
                            initial_replicas=initial, seed=scenario.seed, per_replica_histograms=False)
    return FluidFleet(workload, scenario.serving, scenario.cold_start_profile, scenario.cluster,
                      initial_replicas=initial, seed=scenario.seed, drain_seconds=DRAIN_SECONDS)


def duration_of(workload: Trace | BinnedWorkload) -> float:
    return workload.duration_seconds


def run(scenario: Scenario, workload: Trace | BinnedWorkload, autoscaler: Autoscaler, setting: str = "",
        series_every_seconds: float = SCRAPE_INTERVAL_SECONDS) -> RunResult:
    wall0 = time.perf_counter()
    initial = autoscaler.initial_replicas(scenario.initial_replicas)
    fleet = make_fleet(scenario, workload, initial)
    view = MetricsView(SCRAPE_INTERVAL_SECONDS, RATE_WINDOW_SECONDS)
    epoch = start_epoch(scenario, workload.start_epoch)
    ctx = Context(view, fleet, epoch, scenario.min_replicas, scenario.max_replicas)
    end = duration_of(workload)
    stop = end + DRAIN_SECONDS
    interval = autoscaler.interval_seconds
    next_scrape, next_tick, next_series = 0.0, interval, 0.0
    st: list[float] = []
    sr: list[int] = []
    sd: list[int] = []
    gpu_at_end: float | None = None
    t = 0.0
    while t <= stop:
        fleet.advance(t)
        if gpu_at_end is None and t >= end:
            gpu_at_end = fleet.gpu_seconds(end)
        if t >= next_scrape:
            view.record(fleet.scrape(t))
            next_scrape += SCRAPE_INTERVAL_SECONDS
        if t >= next_tick:
            desired = autoscaler.tick(t, ctx)
            if desired is not None and desired != fleet.target:
                fleet.set_target(desired, t)
            next_tick += interval
        if t >= next_series and t <= end:
            st.append(t)
            sr.append(fleet.ready_replicas)
            sd.append(fleet.target)
            next_series += series_every_seconds
        if t >= end and fleet.in_flight <= 0:
            break
        t = min(next_scrape, next_tick)
    fleet.advance(max(t, fleet.now))
    outcome = fleet.outcome(scenario.slo.ttft_seconds)
    if gpu_at_end is None:
        gpu_at_end = fleet.gpu_seconds(end)
    outcome = replace(outcome, gpu_hours=gpu_at_end / 3600.0)
    tt, tp = ttft_series(fleet)
    return RunResult(autoscaler.name, setting, outcome, time.perf_counter() - wall0,
                     np.asarray(st), np.asarray(sr), np.asarray(sd), tt, tp,
                     fleet.missed_arrival_times(scenario.slo.ttft_seconds))


def ttft_series(fleet: RequestFleet | FluidFleet, step: float = 60.0) -> tuple[np.ndarray, np.ndarray]:
    """p90 TTFT per arrival minute (unserved requests count as infinitely late, shown clipped)."""
    if isinstance(fleet, RequestFleet):
        arr = fleet.trace.arrival_s
        ttft = np.where(np.isfinite(fleet.ttft), fleet.ttft, np.inf)
        m = (arr // step).astype(np.int64)
        order = np.argsort(m, kind="stable")
        bounds = np.searchsorted(m[order], np.arange(int(m.max()) + 2))
        p90 = np.full(len(bounds) - 1, np.nan)
        for i in range(len(bounds) - 1):
            sel = ttft[order][bounds[i]:bounds[i + 1]]
            if len(sel):
                p90[i] = float(np.quantile(np.minimum(sel, 1e6), 0.9))
        return np.arange(len(p90)) * step, p90
    return fleet.wait_series(step)


def oracle_need(scenario: Scenario, workload: Trace | BinnedWorkload, utilisation: float = 0.85,
                smooth_seconds: int = 5) -> np.ndarray:
    """Replicas each second needs: the 5-s mean of arriving work at 85% utilisation, and enough that a
    1-s burst is served within 3/4 of the TTFT SLO."""
    demand = demand_replicas(workload, scenario.serving, 1.0)
    kernel = np.ones(smooth_seconds) / smooth_seconds
    smooth = np.convolve(demand, kernel, mode="same")
    burst = demand / (0.75 * scenario.slo.ttft_seconds)
    return np.ceil(np.maximum(smooth / utilisation, burst) - 1e-9).astype(np.int64)


def run_oracle(scenario: Scenario, workload: Trace | BinnedWorkload, utilisation: float = 0.85,
               target: float = ORACLE_TARGET) -> RunResult:
    """Replay the oracle, raising its `need` where the SLO is missed, until ≥ `target` attainment
    (`utilisation`: the headroom of the first plan; the bench searches it)."""
    need = oracle_need(scenario, workload, utilisation)
    need = np.minimum(np.maximum(need, scenario.min_replicas), scenario.max_replicas)
    best: RunResult | None = None
    wall = 0.0
    for _ in range(ORACLE_MAX_ROUNDS):
        oracle = Oracle(need, scenario.min_replicas)
        res = run(scenario, workload, oracle)
        wall += res.wall_seconds
        best = res
        if res.outcome.attainment >= target:
            break
        missed = _missed_seconds(res, len(need))
        if not missed.any():
            break
        # capacity was short in the seconds before each miss: one more replica there
        window = 30
        ahead = np.convolve(missed.astype(np.float64), np.ones(window), mode="full")
        bump = ahead[window - 1: window - 1 + len(need)] > 0  # any miss in [s, s + window)
        raised = np.ceil(need * 1.2).astype(np.int64) + 1
        need = np.minimum(np.where(bump, raised, need), scenario.max_replicas)
    assert best is not None
    best.wall_seconds = wall
    return best


def _missed_seconds(res: RunResult, n: int) -> np.ndarray:
    """Seconds (by arrival) that hold a request over the SLO."""
    missed = np.zeros(n, dtype=bool)
    if res.missed_arrivals is not None and len(res.missed_arrivals):
        missed[np.clip(res.missed_arrivals.astype(np.int64), 0, n - 1)] = True
    return missed
