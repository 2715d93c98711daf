"""What would a fixed fleet of N replicas teach the capacity-at-the-SLO learner, for several N?

The learner (autoscaler/core/slo_capacity.py) bins each clean 60-s window by the load per ready replica
and finds the knee: the lowest load bin whose pooled misses exceed the SLO's error budget by half again.
If a replica's capacity at the SLO were a property of the replica alone, every fleet size would show the
same knee. This script replays a scenario with the fleet held at each N (the shipped policy's learner
watching, its decisions ignored) and prints, per load bin, the share of requests that missed:

    python benchmarks/knee_by_fleet.py servegen-mid --replicas 12,18,26
    python benchmarks/knee_by_fleet.py DIR/servegen-mid~d11.yaml --replicas 12,18,26 --full

Each cell is the bin's pooled miss share over the windows it remembers (at most 40, the newest), with
that count; `knee` is the learner's knee for that fleet. A fleet too small for its peak also drains
backlogs through windows the learner counts (it is held at its size, so they look steady): read its
high-load bins with that in mind. docs/benchmarks.md ("Tried in the tenth round") records a run.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from autoscaler.core.slo_capacity import SloCapacity, lower_edge
from autoscaler.policy import PolicySpec
from simulations.autoscalers.base import Context
from simulations.autoscalers.ours import Ours
from simulations.runner import run
from simulations.scenario import build_workload, load_scenario


class FixedWatched(Ours):
    """A fleet held at `replicas`; the decision core runs every tick (its learner sees each window)."""

    def __init__(self, policy: PolicySpec, replicas: int):
        super().__init__(policy)
        self.replicas = replicas

    def initial_replicas(self, default: int) -> int:
        return self.replicas

    def tick(self, now: float, ctx: Context) -> int | None:
        super().tick(now, ctx)
        return self.replicas


@dataclass(frozen=True)
class FleetRun:
    replicas: int
    attainment: float
    gpu_hours: float
    learned: SloCapacity
    knee: float | None


def learn_at(scenario: str, replicas: list[int], policy: PolicySpec, full: bool = False) -> list[FleetRun]:
    sc = load_scenario(scenario)
    wl = build_workload(sc, None if full else sc.quick_limit_seconds)
    out = []
    for n in replicas:
        ours = FixedWatched(policy, n)
        res = run(sc, wl, ours)
        learned = ours.state.slo_capacity
        out.append(FleetRun(n, res.outcome.attainment, res.outcome.gpu_hours, learned,
                            learned.knee(policy.slo.quantile)[0]))
        print(f"  {scenario}: {n} replicas done", file=sys.stderr, flush=True)
    return out


def table(runs: list[FleetRun]) -> list[str]:
    bins = sorted({b[0] for r in runs for b in r.learned.bins})
    head = [f"{r.replicas} replicas" for r in runs]
    lines = ["| load per replica (× prior) | " + " | ".join(head) + " |", "|---|" + "---|" * len(runs)]
    cells = [{i: (n, req, m) for i, n, req, m in r.learned.bins} for r in runs]
    for b in bins:
        row = []
        for c in cells:
            if b in c:
                n, req, m = c[b]
                row.append(f"{m / req * 100:.2f}% ({n:.0f})")
            else:
                row.append("–")
        lines.append(f"| {lower_edge(b):.3f} | " + " | ".join(row) + " |")
    lines.append("| knee | " + " | ".join(f"{r.knee:.3f}" if r.knee is not None else "none" for r in runs) + " |")
    lines.append("| attainment, GPU-h | " + " | ".join(
        f"{r.attainment * 100:.2f}%, {r.gpu_hours:.1f}" for r in runs) + " |")
    return lines


def _replicas(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--replicas: expected whole numbers like 12,18,26, got {text!r}") from None
    if not values or any(not 1 <= v <= 1000 for v in values):
        raise argparse.ArgumentTypeError(f"--replicas: each must be within 1..1000, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    from autoscaler.policy_loader import load_policy_file
    from simulations.bench import default_policy_file

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", help="a bench scenario name or a scenario YAML file")
    ap.add_argument("--replicas", type=_replicas, required=True, help="fleet sizes, e.g. 12,18,26")
    ap.add_argument("--policy", default=None, help="policy file (default: the bench's default policy)")
    ap.add_argument("--full", action="store_true", help="the whole trace instead of the quick run's")
    a = ap.parse_args(argv)
    policy = load_policy_file(a.policy or default_policy_file())[0].spec
    print("\n".join(table(learn_at(a.scenario, a.replicas, policy, a.full))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
