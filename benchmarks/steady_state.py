"""Ours with its memory: every day of a multi-day scenario replayed from the state the day before left.

    python benchmarks/steady_state.py DIR [--scenarios a,b] [--priors-scale 0.7] [--workers 2] [--per-day]
                                          [--days N] [--log LOGDIR]

DIR holds the replay set's day variants (`replay_set.py write DIR`: NAME~d2.yaml … NAME~d14.yaml). The
bench and the replay set replay ours on each day from an empty state, as on the day it is installed. A
controller that has run since then starts each day with the core's memory (forecaster history, capacity at
the SLO per load bin, the engine's evidence, the SLO budget, learned cold starts), which it keeps in the
policy's status across restarts. This replays ours on day 1 (the shipped scenario) and on each day variant
twice: fresh, and carried (day n starts from the state day n − 1's carried replay ended with: a controller
running since day 1). Each day starts from the same fleet both ways (the day's `initial_replicas`), and the
core's clock runs on across days (each day's trace keeps its dates), so carried state is read at the times
it was written. Prints, per scenario, the days at 99% and the GPU-hours fresh and carried; `--per-day`
adds a row per day. docs/benchmarks.md ("Ours with its memory") records a run.

To trace why a carried day differs from its fresh replay: `--days N` replays only days 1..N, and `--log
LOGDIR` writes each replay's decision log (`simulations/decision_log.py`: one JSON line per tick, with the
capacity factor, load factor, knees and candidates) as LOGDIR/NAME-dN-carried.jsonl and
LOGDIR/NAME-dN-fresh.jsonl (day 1: carried only, the two are one replay).
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: its sibling modules

from autoscaler.cli.params import PRIORS_SCALE, WORKERS, arg_count
from simulations.bench import TARGET
from simulations.scenario import bench_scenario_names

if TYPE_CHECKING:
    from simulations.outcome import Outcome
    from simulations.scenario import Scenario

Day = tuple[int, float, float, float, float]  # (day, fresh attainment, fresh GPU-h, carried attainment, carried GPU-h)


def days_of(out: Path, name: str) -> list[tuple[int, str]]:
    """(day, scenario name or file) for day 1 (the shipped scenario) and each NAME~dN.yaml in `out`, by day."""
    days = ((p.stem.split("~d", 1)[1], str(p)) for p in out.glob(f"{name}~d*.yaml"))
    return [(1, name), *sorted((int(n), path) for n, path in days if n.isdigit())]


Job = tuple[str, list[tuple[int, str]], float, Path | None]  # (scenario, its days, priors scale, log folder)


def chain(job: Job) -> tuple[str, list[Day]]:
    """Each day of one scenario, fresh and carried (see the module's docstring); with a log folder, each
    replay's decision log is written there."""
    from simulations.autoscalers.ours import Ours
    from simulations.bench import ours_replay
    from simulations.decision_log import DecisionLog
    from simulations.runner import run
    from simulations.trace import BinnedWorkload, Trace

    name, days, scale, logs = job

    def replay(sc: Scenario, wl: Trace | BinnedWorkload, ours: Ours, day: int, kind: str) -> Outcome:
        if logs is None:
            return run(sc, wl, ours).outcome
        with DecisionLog(logs / f"{name}-d{day}-{kind}.jsonl") as log:
            ours.on_decision = log.write
            return run(sc, wl, ours).outcome

    rows: list[Day] = []
    state = None
    for day, scenario in days:
        sc, wl, policy = ours_replay(scenario, scale)
        carried_ours = Ours(policy, state=state)
        carried = replay(sc, wl, carried_ours, day, "carried")
        # Day 1 starts from nothing both ways: the same replay, run once.
        fresh = carried if state is None else replay(sc, wl, Ours(policy), day, "fresh")
        state = carried_ours.state
        rows.append((day, fresh.attainment, fresh.gpu_hours, carried.attainment, carried.gpu_hours))
        print(f"  {name} day {day}: fresh {fresh.attainment:.2%} {fresh.gpu_hours:.2f} GPU-h, carried "
              f"{carried.attainment:.2%} {carried.gpu_hours:.2f} GPU-h", file=sys.stderr, flush=True)
    return name, rows


def jobs_for(out: Path, names: list[str], scale: float, days: int | None = None,
             logs: Path | None = None) -> list[Job]:
    """One chain per scenario in `names` with day variants in `out`: its days (only 1..`days` when given)."""
    kept = [(n, [x for x in d if days is None or x[0] <= days]) for n in names if len(d := days_of(out, n)) > 1]
    return [(n, d, scale, logs) for n, d in kept]


def table(results: list[tuple[str, list[Day]]], per_day: bool = False) -> list[str]:
    """Per scenario: the days at 99% and the GPU-hours, fresh and carried, and carried ÷ fresh (day 1 apart:
    both start from nothing there)."""
    lines = ["| scenario | days | at 99%: fresh → carried | GPU-h fresh | GPU-h carried | carried ÷ fresh | "
             "days 2+: carried ÷ fresh |", "|---|---|---|---|---|---|---|"]
    for name, rows in results:
        fa, ca = sum(r[1] >= TARGET for r in rows), sum(r[3] >= TARGET for r in rows)
        fg, cg = sum(r[2] for r in rows), sum(r[4] for r in rows)
        later = [r for r in rows if r[0] > 1]
        lg = sum(r[4] for r in later) / sum(r[2] for r in later) if later and sum(r[2] for r in later) > 0 else None
        lines.append(f"| {name} | {len(rows)} | {fa} → {ca} | {fg:.2f} | {cg:.2f} | "
                     f"{cg / fg if fg > 0 else float('nan'):.3f} | {f'{lg:.3f}' if lg is not None else '–'} |")
        if per_day:
            for d, a1, g1, a2, g2 in rows:
                lines.append(f"| {name} day {d} | | {a1:.2%} → {a2:.2%} | {g1:.2f} | {g2:.2f} | "
                             f"{g2 / g1 if g1 > 0 else float('nan'):.3f} | |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path, help="the replay set's folder (replay_set.py write DIR)")
    ap.add_argument("--scenarios", default="", help="comma list (default: every scenario with day variants in DIR)")
    ap.add_argument("--priors-scale", type=PRIORS_SCALE, default=1.0, help="every capacity and cold-start prior × this")
    ap.add_argument("--workers", type=WORKERS, default=2)
    ap.add_argument("--per-day", action="store_true", help="also a row per day")
    ap.add_argument("--days", type=arg_count(2, 366), default=None,
                    help="only days 1..N (N ≥ 2: day 1 alone carries nothing; default: every day in DIR)")
    ap.add_argument("--log", type=Path, default=None,
                    help="write each replay's decision log here (NAME-dN-carried.jsonl, NAME-dN-fresh.jsonl)")
    a = ap.parse_args(argv)
    wanted = [n for n in a.scenarios.split(",") if n] or bench_scenario_names()
    jobs = jobs_for(a.dir, wanted, a.priors_scale, a.days, a.log)
    if not jobs:
        ap.error(f"{a.dir}: no day variants (NAME~d2.yaml …) of {', '.join(wanted)}; "
                 f"run `python benchmarks/replay_set.py write {a.dir}` first")
    with ProcessPoolExecutor(a.workers) as pool:
        results = list(pool.map(chain, jobs))
    print("\n".join(table(results, a.per_day)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
