"""Step bursts with the operator's floor: every family's frontier when each may also hold a minimum.

No online policy reaches 99% on a step that arrives before any replica can start (docs/benchmarks.md, "Why
M"): the lever a platform team has for it is capacity held before it, a floor. The bench gives the baselines'
floor (`min_replicas`) only in its full mode, with candidates 1, 2 and 4, and ours none. Here every
online family gets the same floors on the step-burst scenarios, and at each floor the bench's own job: ours
as shipped and with its utilisation knob bisected, HPA, KEDA and Knative with their main knob bisected at
every signal or scale-down delay the quick bench crosses; static's replica count is bisected as in the
bench (a floor is all a static fleet is). Every visited point counts towards its family's curve.

    python benchmarks/floor_frontier.py [--scenarios azure-code,flash-crowd] [--floors 8,12,16,20] \\
        [--workers 2] [--json OUT.json]
    python benchmarks/floor_frontier.py --records A.json B.json   # runs saved with other floors, as one report

Prints, per scenario, each family's cheapest setting that reaches 99% (with its floor) and how ours' curve
compares with each baseline's (the bench's `curve_comparison` rule: at how many of a baseline's frontier
steps ours' frontier reaches as much attainment for no more GPU-hours). The two scenarios at four floors:
90 jobs, 523 replays, about 18 minutes on 2 cores; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: its sibling modules

from autoscaler.cli.params import WORKERS
from simulations.bench import TARGET, Job, default_policy_file, run_jobs
from simulations.bench_report import best_within, envelope
from simulations.search import FAMILIES, knobs_for

STEP_SCENARIOS = ("azure-code", "flash-crowd")
FLOORS = (8, 12, 16, 20)
ONLINE = ("hpa", "keda", "kpa")
_FLOOR = re.compile(r"min_replicas=(\d+)")


def jobs(scenarios: list[str], floors: list[int], policy_file: str) -> list[Job]:
    """The bench's quick jobs of every family at every floor (static: its own search, no floor)."""
    out: list[Job] = []
    for sc in scenarios:
        out.append(Job(sc, "static", "search", (), True, policy_file))
        for f in floors:
            floor = (("min_replicas", f),)
            out.append(Job(sc, "ours", "default", floor, True, policy_file))
            out.append(Job(sc, "ours", "search", floor, True, policy_file))
            for fam in ONLINE:
                _, combos = knobs_for(fam, quick=True)
                out.extend(Job(sc, fam, "search", (*c, *floor), True, policy_file) for c in combos)
    return out


def points(records: list[dict[str, Any]], scenario: str, family: str) -> list[tuple[float, float, str]]:
    """(GPU-hours, attainment, setting) of every replay of `family` on `scenario`, by cost."""
    return sorted((float(p["gpu_hours"]), float(p["attainment"]), str(p["setting"])) for r in records
                  if r["scenario"] == scenario and r["family"] == family for p in r["points"])


def floor_of(setting: str) -> int | None:
    """The floor a point was replayed at (`min_replicas=N` in its setting), None for static fleets."""
    m = _FLOOR.search(setting)
    return int(m.group(1)) if m else None


def best(pts: list[tuple[float, float, str]]) -> tuple[str, str] | None:
    """(GPU-hours of the cheapest point reaching 99%, or ✗ and the best attainment where none did; its
    setting), None without points."""
    ok = [p for p in pts if p[1] >= TARGET]
    if not pts:
        return None
    if not ok:
        _, a, setting = max(pts, key=lambda p: (p[1], -p[0]))
        return f"✗ {a * 100:.1f}%", setting
    g, _, setting = min(ok)
    return f"{g:.2f}", setting


def cheapest(pts: list[tuple[float, float, str]]) -> str:
    found = best(pts)
    return "–" if found is None else f"{found[0]} ({found[1]})"


def curve_cell(ours: list[tuple[float, float]], steps: list[tuple[float, float]]) -> str:
    """The bench's rule: steps of the baseline's frontier where ours' frontier is on or above it."""
    if not ours or not steps:
        return "–"
    inside = [(g, a) for g, a in steps if g >= ours[0][0] * (1 - 1e-9)]
    above = sum(1 for g, a in inside if (best_within(ours, g) or -1.0) >= a - 1e-12)
    below = len(steps) - len(inside)
    return (f"{above}/{len(inside)}" + (" ✓" if inside and above == len(inside) else "")
            + (f" (+{below} cheaper than ours)" if below else ""))


def report(records: list[dict[str, Any]], scenarios: list[str]) -> list[str]:
    fams = ["ours", "static", *ONLINE]
    lines = ["| scenario | " + " | ".join(fams) + " |", "|---|" + "---|" * len(fams)]
    for sc in scenarios:
        lines.append(f"| {sc} | " + " | ".join(cheapest(points(records, sc, f)) for f in fams) + " |")
    lines += ["", "Ours' curve against each baseline's (every floor):", "",
              "| scenario | " + " | ".join(fams[1:]) + " |", "|---|" + "---|" * (len(fams) - 1)]
    for sc in scenarios:
        ours = [(g, a) for g, a, _ in points(records, sc, "ours")]
        cells = [curve_cell(ours, envelope([(g, a) for g, a, _ in points(records, sc, f)])) for f in fams[1:]]
        lines.append(f"| {sc} | " + " | ".join(cells) + " |")
    return [*lines, "", "Per floor, each family's cheapest setting reaching 99% (GPU-hours):", "",
            *per_floor(records, scenarios)]


def per_floor(records: list[dict[str, Any]], scenarios: list[str]) -> list[str]:
    """One row per scenario and floored family, one column per floor: its cheapest point reaching 99%
    there (✗ and the best attainment where none did)."""
    fams = ["ours", *ONLINE]
    by: dict[tuple[str, str, int], list[tuple[float, float, str]]] = {}
    for sc in scenarios:
        for fam in fams:
            for p in points(records, sc, fam):
                f = floor_of(p[2])
                if f is not None:
                    by.setdefault((sc, fam, f), []).append(p)
    floors = sorted({f for _, _, f in by})
    lines = ["| floor | " + " | ".join(map(str, floors)) + " |", "|---|" + "---|" * len(floors)]
    for sc in scenarios:
        for fam in fams:
            cells = [found[0] if (found := best(by.get((sc, fam, f), []))) else "–" for f in floors]
            if any(c != "–" for c in cells):
                lines.append(f"| {sc}: {fam} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default=",".join(STEP_SCENARIOS))
    ap.add_argument("--floors", default=",".join(map(str, FLOORS)), help="comma-separated replica floors")
    ap.add_argument("--policy", default=default_policy_file())
    ap.add_argument("--workers", type=WORKERS, default=2)
    ap.add_argument("--json", type=Path, help="write every record here")
    ap.add_argument("--records", type=Path, nargs="+", help="report these saved --json files together; run nothing")
    a = ap.parse_args(argv)
    scenarios = [s for s in a.scenarios.split(",") if s]
    if a.records:
        try:
            saved = [r for p in a.records for r in json.loads(p.read_text())]
        except (OSError, ValueError) as e:
            ap.error(f"--records: {e}")
        print("\n".join(report(saved, scenarios)))
        return 0
    try:
        floors = sorted({int(x) for x in a.floors.split(",") if x})
    except ValueError:
        ap.error(f"--floors: whole numbers separated by commas, not {a.floors!r}")
    if not floors or min(floors) < 1:
        ap.error("--floors: at least one floor, each ≥ 1")
    assert set(ONLINE) <= set(FAMILIES)
    todo = jobs(scenarios, floors, a.policy)
    done = 0

    def progress(_i: int, job: Job, _rec: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        print(f"[{done}/{len(todo)}] {job.title}", file=sys.stderr, flush=True)

    records = run_jobs(todo, a.workers, on_done=progress)
    if a.json:
        a.json.write_text(json.dumps(records))
    print("\n".join(report(records, scenarios)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
