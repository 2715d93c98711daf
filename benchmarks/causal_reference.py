"""How much of ours' gap to the oracle is the price of not seeing the future?

The oracle (simulations/autoscalers/oracle.py) plans from the trace's requirement `req[s]`, a property of
the arrivals up to second s, and its foresight is only in *when* it orders replicas: a cold start before
the requirement rises. The causal reference here keeps everything else (the same requirement, exact and
without metric lag, the same headroom knob, searched by the bench's own search for the cheapest plan
reaching 99%) and drops the foresight: it orders replicas when the requirement of the last tick exceeds
the fleet, and lets one go when the requirement has stayed below the fleet for a cold start. It has no
forecaster either, so on traffic with a daily shape a forecasting policy can beat it; on minute-scale rises
nobody forecasts, it says what perfect measurement alone can do.

    python benchmarks/causal_reference.py [--scenarios a,b] [--workers 2]

prints, per quick scenario: the oracle's headroom plan (searched as the bench searches it), the causal
reference, ours as shipped, and the ratios. docs/benchmarks.md ("Oracle and causal reference") records a run.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING

from autoscaler.cli.params import WORKERS
from simulations.autoscalers.base import Context
from simulations.autoscalers.oracle import ORACLE_TARGET, TICK_SECONDS, Oracle, peek_leads, plan_need
from simulations.search import Point, main_knob, search

if TYPE_CHECKING:
    from simulations.scenario import Scenario
    from simulations.trace import BinnedWorkload, Trace

SCENARIOS = ("diurnal", "servegen-large", "servegen-large-cold", "servegen-mid", "azure-code", "azure-conv",
             "azure-conv-cold", "flash-crowd")


class CausalReference(Oracle):
    """The oracle's plan, followed without foresight (see the module docstring)."""

    name = "causal"

    def __init__(self, need, min_replicas: int, initial: int):  # type: ignore[no-untyped-def]
        super().__init__(need, min_replicas)
        self._initial = initial

    def initial_replicas(self, default: int) -> int:
        return max(self.min_replicas, self._initial)  # where every online family starts

    def tick(self, now: float, ctx: Context) -> int | None:
        fleet = ctx.fleet
        active = fleet.target
        current = self.need_between(max(0.0, now - TICK_SECONDS), now)
        if current > active:
            return current
        lead = peek_leads(fleet.lifecycle, now, 1)[0]
        recent = self.need_between(max(0.0, now - lead), now)  # keep a replica for a cold start after its use
        return recent if recent < active else active


def _scenario(name: str) -> tuple[Scenario, Trace | BinnedWorkload]:
    from simulations.bench import load_replay
    from simulations.fidelity import fleet_mode
    from simulations.scenario import load_scenario

    return load_replay(name, True, fleet_mode(load_scenario(name).fidelity, "oracle"))  # the oracle's fleet model


def _ours(name: str) -> tuple[str, float, float]:
    from simulations.autoscalers.ours import Ours
    from simulations.bench import default_policy_file, policy_spec
    from simulations.runner import run

    sc, wl = _scenario(name)
    r = run(sc, wl, Ours(policy_spec(default_policy_file())))
    return name, r.outcome.attainment, r.outcome.gpu_hours


def _searched(job: tuple[str, str]) -> tuple[str, str, tuple[float, float, float] | None]:
    """The cheapest headroom reaching the target, found by the bench's own search of the oracle's knob
    (quick brackets): (headroom, attainment, GPU-h), or None when no headroom within bounds reaches it."""
    from simulations.runner import run

    name, family = job
    sc, wl = _scenario(name)

    def evaluate(h: float) -> Point:
        auto = (Oracle.for_scenario(sc, wl, h) if family == "oracle" else
                CausalReference(plan_need(sc, wl, h), max(0, sc.min_replicas), sc.initial_replicas))
        r = run(sc, wl, auto)
        print(f"  {name:20s} {family:7s} headroom {h:6.3f}: {r.outcome.attainment * 100:6.2f}% "
              f"{r.outcome.gpu_hours:9.2f} GPU-h", flush=True)
        return Point(h, r.outcome.attainment, r.outcome.gpu_hours, {})

    res = search(evaluate, main_knob("oracle", quick=True), ORACLE_TARGET, probe_beyond=False)
    return name, family, (res.best.value, res.best.attainment, res.best.gpu_hours) if res.reached else None


def _cell(v: tuple[float, float, float] | None) -> str:
    return "✗" if v is None else f"{v[2]:.2f} (headroom {v[0]:.3g})"


def _ratio(gpu: float | None, of: tuple[float, float, float] | None) -> str:
    return "–" if gpu is None or of is None else f"{gpu / of[2]:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--workers", type=WORKERS, default=2)
    a = ap.parse_args(argv)
    names = [n for n in a.scenarios.split(",") if n]
    with ProcessPoolExecutor(a.workers) as pool:
        ours = {n: (att, gpu) for n, att, gpu in pool.map(_ours, names)}
        found = {(n, f): v for n, f, v in pool.map(_searched, [(n, f) for f in ("oracle", "causal") for n in names])}
    oracle = {n: found[n, "oracle"] for n in names}
    causal = {n: found[n, "causal"] for n in names}

    print("\n| scenario | oracle (headroom plan) | causal reference | causal ÷ oracle | ours as shipped "
          "| ours ÷ oracle | ours ÷ causal |")
    print("|---|---|---|---|---|---|---|")
    for n in names:
        o, c, (att, gpu) = oracle[n], causal[n], ours[n]
        reached = att >= ORACLE_TARGET
        print(f"| {n} | {_cell(o)} | {_cell(c)} | {_ratio(c[2] if c else None, o)} | "
              f"{f'{gpu:.2f}' if reached else f'✗ {att * 100:.1f}%'} | {_ratio(gpu if reached else None, o)} | "
              f"{_ratio(gpu if reached else None, c)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
