"""Where ours' replicas go, per bench scenario: each replay's decision log read back by part.

    python benchmarks/where_replicas_go.py [--scenarios a,b] [--priors-scale 0.7] [--workers 2]

replays ours as shipped on each scenario's quick trace (the bench's `ours default` job), writes its decision
at every tick (simulations/decision_log.py) and prints one row per scenario: attainment, GPU-hours, the
mean replicas paid for (GPU-hours over the trace's hours), and the mean replicas asked for split by what
asked for them: the demand seen at a replica's capacity at the SLO as learned so far, the planned
utilization's margin and the backlog's drain, the forecast's upper band one cold start ahead, burst
headroom, floors, and what was held above all of them; then a second table splits the held replicas by
what held them (the scale-down window, its rate limit, the untested-load floor, a panic, unknown data).
Set against the oracle's cost (the bench's table), it says which part of the policy a gap comes from.
docs/benchmarks.md ("Where the replicas go") records a run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: its sibling modules

from autoscaler.cli.params import PRIORS_SCALE, WORKERS
from simulations.decision_log import HOLDERS, PARTS, Breakdown, DecisionLog, breakdown
from simulations.scenario import bench_scenario_names, scenario_names


def replay(job: tuple[str, float]) -> tuple[str, float, float, float, Breakdown]:
    """(name, attainment, GPU-hours, trace hours, breakdown) of ours as shipped on the scenario's quick trace."""
    from simulations.autoscalers.ours import Ours
    from simulations.bench import ours_replay
    from simulations.runner import duration_of, run

    name, scale = job
    sc, wl, policy = ours_replay(name, scale)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}-decisions.jsonl"
        with DecisionLog(path) as log:
            r = run(sc, wl, Ours(policy, on_decision=log.write))
        return name, r.outcome.attainment, r.outcome.gpu_hours, duration_of(wl) / 3600.0, breakdown(path)


def table(rows: list[tuple[str, float, float, float, Breakdown]]) -> str:
    head = ["scenario", "attainment", "GPU-h", "mean paid", "mean asked", *PARTS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, att, gpu, hours, b in rows:
        out.append(f"| {name} | {att * 100:.2f}% | {gpu:.2f} | {gpu / hours:.1f} | {b.desired:.1f} | "
                   + " | ".join(f"{b.parts[p]:.1f}" for p in PARTS) + " |")
    out += ["", "Held, by what held it (mean replicas per tick; together the `held` column):", "",
            "| scenario | " + " | ".join(HOLDERS) + " |", "|" + "---|" * (len(HOLDERS) + 1)]
    out += [f"| {name} | " + " | ".join(f"{b.held_by.get(h, 0.0):.1f}" for h in HOLDERS) + " |"
            for name, _, _, _, b in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", default=",".join(bench_scenario_names()), help="comma list of scenarios")
    ap.add_argument("--priors-scale", type=PRIORS_SCALE, default=1.0, help="every capacity and cold-start prior × this")
    ap.add_argument("--workers", type=WORKERS, default=2)
    a = ap.parse_args(argv)
    names = [n for n in a.scenarios.split(",") if n]
    unknown = sorted(set(names) - set(scenario_names()))
    if unknown:
        ap.error(f"--scenarios: unknown {', '.join(unknown)} (one of {', '.join(scenario_names())})")
    with ProcessPoolExecutor(a.workers) as pool:
        rows = []
        for row in pool.map(replay, [(n, a.priors_scale) for n in names]):
            print(f"  {row[0]}: {row[2]:.2f} GPU-h", file=sys.stderr, flush=True)
            rows.append(row)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
