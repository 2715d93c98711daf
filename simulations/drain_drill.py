"""Cordon-and-drain drill in the simulator: what draining a node costs the SLO with and without the surge.

Steady load from a scenario (default: flash-crowd's first 50 minutes, Poisson at its base rate, before its
burst). At `cordon_at` the node hosting the most ready replicas is cordoned: no new replica is placed on
it. After `delay` seconds (the operator's `kubectl drain`) its replicas are evicted: each finishes what it
has started and re-routes what it has not (the simulator's drain), and the ReplicaSet recreates them on
other nodes (a new node boots when none has room), as Kubernetes does after an eviction. Compared:

- `ours+surge`: the decision core sees the replicas on the cordoned node as leaving (ReplicaCounts.leaving)
  and starts replacements at once (stages/leaving.py);
- `ours`: the same policy blind to the cordon (leaving = 0), as before this feature;
- `static`: a fixed fleet of the size ours had at the cordon;
- `ours+surge, drain-check`: the operator drains only when `drain-check` would say yes (ready replicas
  on nodes that stay >= the need), i.e. what a PodDisruptionBudget with maxUnavailable 1 enforces.

Reported per run: SLO attainment of requests arriving in the drain window (cordon to eviction + 15 min), over
the whole run, the fewest ready replicas in the window, and GPU-hours.

    python -m simulations.drain_drill --scenario flash-crowd --duration 3000 --cordon-at 1500 --delay 300 \
        --gpus-per-node 8
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from autoscaler.core import ClusterFacts, ReplicaCounts
from autoscaler.policy import PolicySpec
from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.base import Autoscaler
from simulations.autoscalers.ours import Ours
from simulations.autoscalers.static import Static
from simulations.engine_step import Engine
from simulations.errors import SimulationInputError
from simulations.fleet import RequestFleet
from simulations.lifecycle import Lifecycle, Node
from simulations.runner import Loop
from simulations.scenario import YEAR, Scenario, build_workload, bundled_path, load_scenario, revised_scenario
from simulations.trace import Trace

WINDOW_AFTER_EVICTION_SECONDS = 900.0


class CordonLifecycle(Lifecycle):
    """The lifecycle with cordoned nodes: placement and free-slot counts skip them (a cordoned node keeps its
    replicas until they are evicted, and takes no new one)."""

    cordoned: set[int]

    @contextmanager
    def _schedulable_only(self) -> Iterator[None]:
        hidden = [n for n in self.nodes if id(n) in self.cordoned]
        if not hidden:
            yield
            return
        self.nodes = [n for n in self.nodes if id(n) not in self.cordoned]
        try:
            yield
        finally:
            self.nodes.extend(hidden)

    def _find_node(self, now: float) -> tuple[Node | None, bool]:
        with self._schedulable_only():
            return super()._find_node(now)

    def free_slots(self, now: float) -> int:
        with self._schedulable_only():
            return super().free_slots(now)

    def cluster_facts(self, now: float) -> ClusterFacts:
        with self._schedulable_only():
            return super().cluster_facts(now)


class DrainFleet(RequestFleet):
    """The request-level fleet plus cordon and eviction of one node. `sees_leaving`: whether the replica
    counts it reports carry the leaving replicas (what the controller reads from nodes and pods)."""

    def __init__(self, *args: Any, sees_leaving: bool = True, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lifecycle.__class__ = CordonLifecycle  # same state, cordon-aware placement
        self._cordon_lc().cordoned = set()
        self.sees_leaving = sees_leaving
        self.node: Node | None = None

    def _cordon_lc(self) -> CordonLifecycle:
        lc = self.lifecycle
        assert isinstance(lc, CordonLifecycle)
        return lc

    def _on_node(self, rep: Engine) -> bool:
        return self.node is not None and rep.life.node is self.node

    def cordon(self, t: float) -> int:
        """Cordon the node with the most ready replicas; returns how many replicas it hosts."""
        self.advance(t)
        counts: dict[int, tuple[Node, int]] = {}
        for rep in self._serving:
            node = rep.life.node
            if node is not None:
                counts[id(node)] = (node, counts.get(id(node), (node, 0))[1] + 1)
        if not counts:
            raise ValueError("no replica runs on a node (unlimited GPUs): nothing to cordon")
        self.node = max(counts.values(), key=lambda v: v[1])[0]
        self._cordon_lc().cordoned.add(id(self.node))
        return self.leaving_now()

    def leaving_now(self) -> int:
        return sum(1 for r in (*self._serving, *self._starting) if self._on_node(r))

    def ready_staying(self) -> int:
        return sum(1 for r in self._serving if not self._on_node(r))

    def replica_counts(self, t: float) -> ReplicaCounts:
        counts = super().replica_counts(t)
        return replace(counts, leaving=self.leaving_now()) if self.sees_leaving else counts

    def evict(self, t: float) -> int:
        """Evict every replica on the cordoned node; the ReplicaSet recreates them elsewhere."""
        self.advance(t)
        evicted = 0
        for rep in [r for r in self._serving if self._on_node(r)]:
            self._drain(self._remove_serving(self._serving.index(rep)), t)
            evicted += 1
        for rep in [r for r in self._starting if self._on_node(r)]:
            self._starting.remove(rep)
            rep.phase_name = "gone"
            self.lifecycle.cancel(rep.life, t)
            evicted += 1
        target, self.target = self.target, -1  # the ReplicaSet's refill: back to spec.replicas, no scale event
        self.scale_events -= 1
        self.set_target(target, t)
        return evicted


@dataclass(frozen=True)
class DrillResult:
    policy: str
    node_replicas: int  # replicas on the cordoned node at the cordon
    evicted_at: float | None
    window_attainment: float
    run_attainment: float
    min_ready_in_window: int
    gpu_hours: float


def drill(scenario: Scenario, workload: Trace, autoscaler: Autoscaler, cordon_at: float, delay: float | None,
          sees_leaving: bool, need: Callable[[DrainFleet, Autoscaler], int | None] | None = None,
          name: str | None = None) -> DrillResult:
    """One run. `delay`: seconds from cordon to eviction; None: evict when `need` is covered by ready replicas
    on nodes that stay (the drain-check rule), checked at every scrape."""
    fleet = DrainFleet(workload, scenario.serving, scenario.cold_start_profile, scenario.cluster,
                       initial_replicas=autoscaler.initial_replicas(scenario.initial_replicas), seed=scenario.seed,
                       per_replica_histograms=False, sees_leaving=sees_leaving)
    loop = Loop(scenario, workload, fleet, autoscaler)
    end = workload.duration_seconds
    on_node, evicted_at, min_ready = 0, None, 1 << 30
    t = 0.0
    while t <= end:
        fleet.advance(t)
        if fleet.node is None and t >= cordon_at:
            on_node = fleet.cordon(t)
        if fleet.node is not None and evicted_at is None:
            due = t >= cordon_at + delay if delay is not None else _covered(fleet, autoscaler, need)
            if due:
                fleet.evict(t)
                evicted_at = t
        loop.act(t)
        window_end = (evicted_at if evicted_at is not None else end) + WINDOW_AFTER_EVICTION_SECONDS
        if cordon_at <= t <= window_end:
            min_ready = min(min_ready, fleet.ready_replicas)
        t = loop.next_event
    fleet.advance(end)
    gpu_hours = fleet.gpu_seconds(end) / 3600.0
    fleet.advance(end + 3600.0)  # let the last requests finish
    ttft = np.asarray(fleet.book.ttft)
    ok = np.where(np.isfinite(ttft), ttft, np.inf) <= scenario.slo.ttft_seconds
    arr = workload.arrival_s
    w_end = (evicted_at if evicted_at is not None else end) + WINDOW_AFTER_EVICTION_SECONDS
    sel = (arr >= cordon_at) & (arr <= w_end)
    return DrillResult(name or autoscaler.name, on_node, evicted_at,
                       float(ok[sel].mean()) if sel.any() else 1.0, float(ok.mean()), int(min_ready),
                       round(gpu_hours, 3))


def _covered(fleet: DrainFleet, autoscaler: Autoscaler, need: Callable[[DrainFleet, Autoscaler], int | None] | None
             ) -> bool:
    wanted = need(fleet, autoscaler) if need is not None else None
    return wanted is not None and fleet.ready_staying() >= wanted


def _need_of_ours(fleet: DrainFleet, autoscaler: Autoscaler) -> int | None:
    """What the controller's status.drain compares against: the decision's need at the SLO."""
    from autoscaler.controller.drain import need_from_decision
    from autoscaler.core import Decision

    d = getattr(autoscaler, "last_decision", None)
    return need_from_decision(d) if isinstance(d, Decision) else None


def run_drill(scenario: Scenario, workload: Trace, policy: PolicySpec, cordon_at: float,
              delay: float) -> list[DrillResult]:
    surge = drill(scenario, workload, Ours(policy), cordon_at, delay, True, name="ours+surge")
    blind = drill(scenario, workload, Ours(policy), cordon_at, delay, False, name="ours (leaving=0)")
    checked = drill(scenario, workload, Ours(policy), cordon_at, None, True, _need_of_ours,
                    name="ours+surge, drain on drain-check yes")
    # The static fleet: the size ours had when the node was cordoned (ours' own steady state).
    size = _size_at(scenario, workload, policy, cordon_at)
    static = drill(scenario, workload, Static(size), cordon_at, delay, False, name=f"static({size})")
    return [surge, blind, checked, static]


def _size_at(scenario: Scenario, workload: Trace, policy: PolicySpec, at: float) -> int:
    """Ours' replica count at `at` without any cordon (the steady fleet a static one is compared with)."""
    ours = Ours(policy)
    fleet = DrainFleet(workload, scenario.serving, scenario.cold_start_profile, scenario.cluster,
                       initial_replicas=ours.initial_replicas(scenario.initial_replicas), seed=scenario.seed,
                       per_replica_histograms=False)
    loop, t = Loop(scenario, workload, fleet, ours), 0.0
    while t < at:
        fleet.advance(t)
        loop.act(t)
        t = loop.next_event
    return fleet.target


def render(results: list[DrillResult], slo: float) -> str:
    lines = [f"{'policy':40} {'node':>4} {'evicted':>8} {'window att.':>11} {'run att.':>9} {'min ready':>9} "
             f"{'GPU-h':>7}"]
    for r in results:
        ev = f"{r.evicted_at:.0f}s" if r.evicted_at is not None else "never"
        lines.append(f"{r.policy:40} {r.node_replicas:>4} {ev:>8} {r.window_attainment:>11.2%} "
                     f"{r.run_attainment:>9.2%} {r.min_ready_in_window:>9} {r.gpu_hours:>7.2f}")
    lines.append(f"(attainment: share of requests with TTFT <= {slo:g} s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulations.drain_drill", description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="flash-crowd", help="a request-level scenario (name or file)")
    ap.add_argument("--duration", type=float, default=3000.0, help="seconds of the scenario to replay")
    ap.add_argument("--cordon-at", type=float, default=1500.0, help="seconds into the run the node is cordoned")
    ap.add_argument("--delay", type=float, default=300.0, help="seconds from cordon to `kubectl drain`")
    ap.add_argument("--gpus-per-node", type=int, default=None,
                    help="GPUs per node (default: the scenario's); more replicas per node, more leave at once")
    ap.add_argument("--policy", default=None, help="policy YAML (default: the shipped one)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    a = ap.parse_args(argv)
    if not 0 < a.duration <= YEAR:
        print("error: --duration must be a number of seconds within (0, 366 d]", file=sys.stderr)
        return 2
    try:
        scenario = load_scenario(a.scenario)
        if a.gpus_per_node is not None:
            scenario = revised_scenario(scenario, "--gpus-per-node", cluster={"gpus_per_node": a.gpus_per_node})
        workload = build_workload(scenario, limit_seconds=a.duration)
    except SimulationInputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not isinstance(workload, Trace):
        print(f"error: scenario {scenario.name} is fluid; the drill needs a request-level one "
              "(fidelity: request), e.g. flash-crowd", file=sys.stderr)
        return 2
    if not 0 < a.cordon_at < workload.duration_seconds:
        print(f"error: --cordon-at must be within the run (0, {workload.duration_seconds:.0f})", file=sys.stderr)
        return 2
    policy = load_policy_file(a.policy or bundled_path("default-policy.yaml"))[0].spec
    results = run_drill(scenario, workload, policy, a.cordon_at, a.delay)
    if a.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        print(f"{scenario.name}, {a.duration:.0f} s, {scenario.cluster.gpus_per_node} GPU(s)/node, cordon at "
              f"{a.cordon_at:.0f} s, drain after {a.delay:.0f} s")
        print(render(results, scenario.slo.ttft_seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
