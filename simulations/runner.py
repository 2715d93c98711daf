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
from simulations.feasibility import score_distribution, score_requests
from simulations.fleet import RequestFleet, victim_rule
from simulations.fluid import FluidFleet
from simulations.metrics_view import MetricsView
from simulations.outcome import Outcome
from simulations.scenario import Scenario, start_epoch
from simulations.trace import BinnedWorkload, Trace

SCRAPE_INTERVAL_SECONDS = 15.0
RATE_WINDOW_SECONDS = 60.0
DRAIN_SECONDS = 600.0


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


class Loop:
    """The replay's clock, shared by every replay (the bench's runs, the drain drill): the fleet is scraped
    every SCRAPE_INTERVAL_SECONDS into a Prometheus-like view, and the autoscaler decides every interval
    on what that view holds; its decision becomes the fleet's target."""

    def __init__(self, scenario: Scenario, workload: Trace | BinnedWorkload, fleet: RequestFleet | FluidFleet,
                 autoscaler: Autoscaler) -> None:
        self.fleet, self.autoscaler = fleet, autoscaler
        self.view = MetricsView(SCRAPE_INTERVAL_SECONDS, RATE_WINDOW_SECONDS)
        self.ctx = Context(self.view, fleet, start_epoch(scenario, workload.start_epoch), scenario.min_replicas,
                           scenario.max_replicas)
        self.next_scrape, self.next_tick = 0.0, autoscaler.interval_seconds

    def act(self, t: float) -> None:
        """Scrape and decide if either is due at `t` (the fleet has been advanced to `t`)."""
        if t >= self.next_scrape:
            self.view.record(self.fleet.scrape(t))
            self.next_scrape += SCRAPE_INTERVAL_SECONDS
        if t >= self.next_tick:
            desired = self.autoscaler.tick(t, self.ctx)
            if desired is not None and desired != self.fleet.target:
                self.fleet.set_target(desired, t)
            self.next_tick += self.autoscaler.interval_seconds

    @property
    def next_event(self) -> float:
        return min(self.next_scrape, self.next_tick)


def run(scenario: Scenario, workload: Trace | BinnedWorkload, autoscaler: Autoscaler, setting: str = "",
        series_every_seconds: float = SCRAPE_INTERVAL_SECONDS) -> RunResult:
    wall0 = time.perf_counter()
    initial = autoscaler.initial_replicas(scenario.initial_replicas)
    fleet = make_fleet(scenario, workload, initial)
    if isinstance(fleet, RequestFleet):
        fleet.victims = victim_rule(autoscaler)  # which replicas a scale-down removes (docs/scale-down.md)
    loop = Loop(scenario, workload, fleet, autoscaler)
    end = duration_of(workload)
    stop = end + DRAIN_SECONDS
    next_series = 0.0
    st: list[float] = []
    sr: list[int] = []
    sd: list[int] = []
    gpu_at_end: float | None = None
    warm_at_end = 0.0
    t = 0.0
    while t <= stop:
        fleet.advance(t)
        if gpu_at_end is None and t >= end:
            gpu_at_end = fleet.gpu_seconds(end)
            warm_at_end = fleet.lifecycle.warm_gpu_seconds(end)
        loop.act(t)
        if t >= next_series and t <= end:
            st.append(t)
            sr.append(fleet.ready_replicas)
            sd.append(fleet.target)
            next_series += series_every_seconds
        if t >= end and fleet.in_flight <= 0:
            break
        t = loop.next_event
    fleet.advance(max(t, fleet.now))
    outcome = fleet.outcome(scenario.slo.ttft_seconds)
    if gpu_at_end is None:
        gpu_at_end = fleet.gpu_seconds(end)
        warm_at_end = fleet.lifecycle.warm_gpu_seconds(end)
    starts = fleet.lifecycle.starts  # every start of the run, the drain included
    outcome = replace(outcome, gpu_hours=gpu_at_end / 3600.0, warm_gpu_hours=warm_at_end / 3600.0,
                      cache_hit_starts=starts["warm"] + starts["cached"], warm_starts=starts["warm"],
                      cold_starts=starts["cold"])
    tt, tp = ttft_series(fleet)
    # attainment over the requests whose TTFT budget an idle replica meets (simulations/feasibility.py)
    if isinstance(fleet, RequestFleet):
        outcome, missed = score_requests(outcome, fleet.ttft, fleet.trace.prompt_tokens, scenario.slo,
                                         scenario.serving, fleet.aborted_mask)
        missed_at = np.asarray(fleet.trace.arrival_s[missed])
    else:
        outcome = score_distribution(outcome, fleet.workload.prompt_sample, scenario.slo, scenario.serving)
        missed_at = fleet.missed_arrival_times(scenario.slo.ttft_seconds)
    return RunResult(autoscaler.name, setting, outcome, time.perf_counter() - wall0,
                     np.asarray(st), np.asarray(sr), np.asarray(sd), tt, tp, missed_at)


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
