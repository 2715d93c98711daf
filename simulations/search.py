"""Exact searches (protocol §4): each family's cheapest setting that reaches the SLO target.

A family has one main knob, searched, and a few behaviour knobs an operator would tune for multi-minute
cold starts, crossed (one search per combination). This module is the one place that knows the
families' sweeps: the table `FAMILIES` (which of the registry's knobs are crossed; the knobs, bounds,
directions and candidates are `simulations.autoscalers.registry`'s) and the adapter that builds and
replays a family at a setting through the registry (`build_autoscaler`, `replay`, `with_secondary`).

The search (`search`) is pure: it is given `evaluate(value) -> Point` and calls it as few times as it can.
1. Start at the knob's usual value. If that reaches the target, step towards cheaper (halve replicas,
   double a per-pod target) until a setting misses or the cheap bound is hit; if it misses, step towards
   costlier until one reaches or the costly bound is hit (then the family cannot reach the target within
   its bounds and its best attainment is reported).
2. Bisect between the cheapest setting seen to reach and the costliest seen to miss, until they are
   adjacent integers (static replicas: exact, one replica fewer was run and misses) or within the knob's
   relative tolerance (continuous knobs, bisected on a log scale where the knob is a ratio).

3. (full bench) Probe one gallop step cheaper than the boundary's miss. Attainment need not be monotone
   in a knob (a lower HPA target can take a different scale-up path; a replay can dip): if the probe
   reaches, the search records the non-monotone pair and continues below it (up to three times).

Every visited point is kept; the winner is the *cheapest visited point by GPU-hours* that reaches the
target (not the boundary setting), and the result says `monotone: false` with the offending pairs
(a costlier setting that missed, a cheaper one that reached). The report flags such searches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from autoscaler.policy import PolicySpec, revised
from simulations.autoscalers import registry
from simulations.autoscalers.base import Autoscaler
from simulations.errors import SimulationInputError
from simulations.runner import RunResult, run
from simulations.scenario import Scenario
from simulations.trace import BinnedWorkload, Trace

Secondary = tuple[tuple[str, float | str], ...]


@dataclass(frozen=True)
class Knob:
    """A family's main knob. `cheaper`: which direction of the value costs fewer GPUs."""

    name: str
    lo: float
    hi: float
    start: float
    cheaper: Literal["lower", "higher"]
    integer: bool = False
    log: bool = True
    tol: float = 0.05  # continuous: relative (log knobs) or absolute (linear knobs) width of the final bracket
    unit: str = ""

    def clamp(self, v: float) -> float:
        v = min(self.hi, max(self.lo, v))
        return float(round(v)) if self.integer else v

    def costlier(self, a: float, b: float) -> bool:
        """Is setting `a` costlier (more capacity) than `b`?"""
        return a > b if self.cheaper == "lower" else a < b

    def step(self, v: float, towards_cheaper: bool, factor: float = 2.0) -> float:
        """The next gallop point from `v`, clamped to the bounds."""
        down = towards_cheaper == (self.cheaper == "lower")  # move the value down?
        nv: float
        if self.integer:
            nv = math.floor(v / factor) if down else math.ceil(v * factor)
            nv = min(nv, v - 1) if down else max(nv, v + 1)
        elif self.log:
            nv = v / factor if down else v * factor
        else:
            width = (self.hi - self.lo) / 4.0
            nv = v - width if down else v + width
        return self.clamp(nv)

    def adjacent(self, a: float, b: float) -> bool:
        if self.integer:
            return abs(a - b) <= 1
        if self.log:
            return max(a, b) / min(a, b) <= 1.0 + self.tol
        return abs(a - b) <= self.tol

    def midpoint(self, a: float, b: float) -> float:
        if self.integer:
            return float(math.floor((a + b) / 2))
        if self.log:
            return math.sqrt(a * b)
        return (a + b) / 2.0

    def label(self, v: float) -> str:
        return f"{self.name}={v:.0f}" if self.integer else f"{self.name}={v:.4g}"


@dataclass(frozen=True)
class Family:
    """What the bench sweeps of a family: the registry's knobs, crossed in the full bench and (fewer) in quick."""

    swept: tuple[str, ...] = ()  # secondary knobs crossed in the full bench (values: the registry's candidates)
    quick_swept: tuple[str, ...] = ()  # crossed in bench --quick
    tol: float = 0.05  # the main knob's final bracket (relative for log knobs)
    not_swept: tuple[str, ...] = ()  # knobs an operator might expect, and why they are not swept


# The registry (simulations.autoscalers.registry) owns each family's knobs, bounds and candidate values;
# this table only says which the bench crosses. A bound that stops a search is reported as such.
FAMILIES: dict[str, Family] = {
    "static": Family(),
    "hpa": Family(swept=("signal", "down_window", "down_policy", "min_replicas"), quick_swept=("signal",),
                  tol=0.1),
    "keda": Family(swept=("signal", "down_window", "down_policy", "min_replicas", "cooldown"),
                   quick_swept=("signal",), tol=0.1),
    "kpa": Family(swept=("scale_down_delay", "window", "min_replicas"), quick_swept=("scale_down_delay",), tol=0.1),
    "ours": Family(tol=0.05),
    "oracle": Family(tol=0.02),
}
QUICK_TOL_FACTOR = 3.0  # bench --quick: brackets this many times wider (static stays exact)


def fmt(v: float | str) -> str:
    return v if isinstance(v, str) else f"{v:g}"


def main_knob(family: str, secondary: Secondary = (), quick: bool = False) -> Knob:
    """The family's main knob as the registry states it (its bounds may depend on the signal setting)."""
    mk = registry.FAMILIES[family].main_for(dict(secondary))
    tol = FAMILIES[family].tol * (QUICK_TOL_FACTOR if quick and not mk.integer else 1.0)
    return Knob(mk.name, mk.lo, mk.hi, mk.default, "higher" if mk.direction == "cheaper_up" else "lower",
                integer=mk.integer, log=not mk.integer and family != "ours", tol=tol, unit=mk.unit)


def build_autoscaler(family: str, value: float, secondary: Secondary, sc: Scenario,
                     wl: Trace | BinnedWorkload, policy: PolicySpec) -> Autoscaler:
    """The family's autoscaler at main-knob `value` with its secondary knobs applied (the registry builds it)."""
    try:
        return registry.FAMILIES[family].make(value, dict(secondary), policy=policy, scenario=sc, workload=wl)
    except ValueError as e:
        raise SimulationInputError("bench", f"{family}:{value:g}", str(e), "see docs/baselines.md") from None


def replay(family: str, value: float, secondary: Secondary, sc: Scenario, wl: Trace | BinnedWorkload,
           policy: PolicySpec, label: str, target: float) -> RunResult:
    """One replay of the family at `value` (`target` is the search's; replays do not depend on it)."""
    return run(sc, wl, build_autoscaler(family, value, secondary, sc, wl, policy), label)


def with_secondary(sc: Scenario, secondary: Secondary) -> Scenario:
    """The scenario with the secondary knobs that live there (min replicas) applied."""
    sec = dict(secondary)
    if "min_replicas" not in sec:
        return sc
    m = int(sec["min_replicas"])
    return revised(sc, min_replicas=m, initial_replicas=max(m, sc.initial_replicas))


def knobs_for(family: str, quick: bool) -> tuple[Knob | None, list[Secondary]]:
    """The main knob at the default settings (tolerance widened in quick mode) and every combination of the
    swept secondary values (the registry's candidates)."""
    fam = FAMILIES[family]
    knobs = {k.name: k.candidates for k in registry.FAMILIES[family].knobs}
    combos: list[Secondary] = [()]
    for name in fam.quick_swept if quick else fam.swept:
        combos = [(*c, (name, v)) for c in combos for v in knobs[name]]
    return main_knob(family, (), quick), combos


@dataclass(frozen=True)
class Point:
    value: float
    attainment: float
    gpu_hours: float
    run: dict[str, Any] = field(default_factory=dict, compare=False)  # the run's full record


@dataclass
class SearchResult:
    knob: Knob
    target: float
    points: list[Point]  # in the order visited
    reach: float | None  # the cheapest setting seen to reach the target (the boundary)
    miss: float | None  # the costliest setting seen to miss it
    violations: list[tuple[float, float]]  # (cheaper setting that reached, costlier one that missed)

    @property
    def reached(self) -> bool:
        return any(p.attainment >= self.target for p in self.points)

    @property
    def monotone(self) -> bool:
        return not self.violations

    @property
    def best(self) -> Point:
        """The cheapest visited point reaching the target; else the best attainment (then the cheaper)."""
        ok = [p for p in self.points if p.attainment >= self.target]
        if ok:
            return min(ok, key=lambda p: (p.gpu_hours, p.value))
        return max(self.points, key=lambda p: (p.attainment, -p.gpu_hours))

    @property
    def exact(self) -> bool:
        """The boundary is bracketed to the knob's resolution (integers: one step)."""
        return self.reach is not None and self.miss is not None and self.knob.adjacent(self.reach, self.miss)

    @property
    def stopped_by(self) -> str:
        if self.reach is not None and self.miss is None:
            return "cheap bound reaches the target"
        if self.reach is None:
            return "costly bound misses the target"
        return ""


def search(evaluate: Callable[[float], Point], knob: Knob, target: float, start: float | None = None,
           probe_beyond: bool = True, max_evaluations: int = 60) -> SearchResult:
    """Gallop from `start` to a bracket, bisect it, then (with `probe_beyond`) look one gallop step
    cheaper than the boundary's miss; if that reaches, attainment is not monotone there: the pair is
    recorded and the search continues from it (at most 3 times). See the module docstring."""
    seen: dict[float, Point] = {}
    order: list[Point] = []

    def ok(v: float) -> bool:
        if v not in seen:
            if len(seen) >= max_evaluations:
                raise RuntimeError(f"search on {knob.name} did not converge in {max_evaluations} runs")
            p = evaluate(v)
            seen[v] = p
            order.append(p)
        return seen[v].attainment >= target

    v = knob.clamp(knob.start if start is None else start)
    reach: float | None = v if ok(v) else None
    miss: float | None = None if reach is not None else v
    for _ in range(4):
        while reach is None or miss is None:  # gallop to a bracket (or a bound)
            here = reach if reach is not None else miss
            assert here is not None
            nv = knob.step(here, towards_cheaper=reach is not None)
            if nv == here:
                break  # a bound: the cheap end reaches, or the costly end misses
            if ok(nv):
                reach = nv
            else:
                miss = nv
        while reach is not None and miss is not None and not knob.adjacent(reach, miss):
            m = knob.clamp(knob.midpoint(reach, miss))
            if m in (reach, miss):
                break
            if ok(m):
                reach = m
            else:
                miss = m
        if not probe_beyond or reach is None or miss is None:
            break
        beyond = knob.step(miss, towards_cheaper=True)
        if beyond == miss or beyond in seen or not ok(beyond):
            break
        reach, miss = beyond, None  # a cheaper setting reaches again: follow it down
    violations = [(a.value, b.value) for a in order for b in order
                  if a.attainment >= target and b.attainment < target and knob.costlier(b.value, a.value)]
    return SearchResult(knob, target, order, reach, miss, violations)
