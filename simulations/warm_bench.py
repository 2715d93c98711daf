"""Warm capacity bench: each family's cheapest setting reaching 99% attainment with a placeholder pool of N.

    python -m simulations.warm_bench [--scenarios flash-crowd,azure-code] [--pools 0,1,2,4] [--workers 2]
                                     [--cold-start cold] [--prestaged 10] [--at VALUE]
                                     [--records runs.jsonl] [--from-records runs.jsonl]
                                     [--doc docs/benchmarks.md] [--plots docs/bench]

`--cold-start` replays on another cold-start profile, `--prestaged` pre-stages the weights on warm slots (the
median load from the node's disk), `--at` replays one main-knob value instead of searching; `--records`
appends each job's record as it finishes and `--from-records` renders records without running.

A warm pool is a fleet-level setting (`ClusterSpec.warm_slots`, simulations/lifecycle.py): N placeholders,
warm at t = 0, kept at N for the whole run. Every family gets the same pool: an operator can run a fixed
placeholder Deployment next to any autoscaler. `ours` runs with `spec.warmCapacity` enabled and
minSlots = maxSlots = N (`with_warm_pool`), so the pool it keeps is N whatever its decision sizes.
`ours-sized` is the same policy with minSlots = 0 and maxSlots = N: from the N slots every family starts with,
its decision sizes the pool every tick (autoscaler/core/stages/warm.py), so the column says what the sizing
keeps and what that buys; at pool 0 it is `ours` exactly and is not run.

One job = scenario × family × pool: the bench's bisection (`simulations.search.search`, quick tolerances, no
probe beyond the boundary) of the family's main knob, with its secondary knobs fixed at `SECONDARY` (the
behaviour settings that won the decision-quality bench at pool 0). Runs are request-level (both scenarios
are request-level scenarios). The oracle is left out: its plan assumes the cold starts of a fleet without a
pool. Output: a table per scenario (GPU-hours of the cheapest setting reaching 99%, its warm share, replica
starts that hit a cache) and a plot per scenario, `warm-SCENARIO.png`: per family, attainment vs GPU-hours of
every visited setting, one curve per pool size.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from autoscaler.policy import PolicySpec, revised
from simulations.autoscalers.ours import with_warm_pool
from simulations.bench import default_policy_file, policy_spec, write_markdown_section
from simulations.bench_report import COLORS
from simulations.profiles import COLD_START_NAMES
from simulations.report import write_json
from simulations.scenario import Scenario, build_workload, load_scenario
from simulations.search import Point, Secondary, fmt, main_knob, replay, search
from simulations.trace import BinnedWorkload, Trace

TARGET = 0.99
SCENARIOS = ("flash-crowd", "azure-code")
FAMILIES = ("ours", "ours-sized", "static", "hpa", "keda", "kpa")
SIZED = "ours-sized"  # ours with the pool sized by its decision within [0, N]
POOLS = (0, 1, 2, 4)
# Behaviour knobs per scenario: each family's winning secondary setting in docs/benchmarks.md's
# decision-quality table (the main knob is searched again here for every pool size).
SECONDARY: dict[str, dict[str, Secondary]] = {
    "flash-crowd": {"hpa": (("signal", "waiting"),), "keda": (("signal", "queue_p90"),),
                    "kpa": (("scale_down_delay", 0.0),)},
    "azure-code": {"hpa": (("signal", "queue_p90"),), "keda": (("signal", "queue_p90"),),
                   "kpa": (("scale_down_delay", 600.0),)},
}
MARK_START = "<!-- warm-capacity:start -->"
MARK_END = "<!-- warm-capacity:end -->"


@dataclass(frozen=True)
class WarmJob:
    scenario: str
    family: str
    pool: int
    policy_file: str
    cold_start: str | None = None  # a cold-start profile instead of the scenario's own
    at: float | None = None  # replay the main knob at this value only (no search)
    prestaged: float | None = None  # weights pre-staged on warm slots: their median local load (s)


@lru_cache(maxsize=2)
def _workload(name: str, cold_start: str | None) -> tuple[Scenario, Trace | BinnedWorkload]:
    sc = load_scenario(name)
    if cold_start is not None and cold_start != sc.cold_start_profile.name:
        sc = revised(sc.with_cold_start(cold_start), name=f"{sc.name} ({cold_start} starts)")
    return sc, build_workload(sc)


PRESTAGE_PATH = "/var/cache/inference-autoscaler/models"  # ours' weightsCachePath when weights are pre-staged


def with_pool(sc: Scenario, pool: int, prestaged: float | None = None) -> Scenario:
    """The scenario with a fixed placeholder pool of `pool` (warm at t = 0); `prestaged`: the median weight
    load from the node's disk on a warm slot (None: weights not pre-staged)."""
    name = sc.name if prestaged is None else f"{sc.name} (weights pre-staged)"
    return revised(sc, cluster={"warm_slots": pool, "warm_weight_load_seconds": prestaged}, name=name)


def with_sized_pool(policy: PolicySpec, most: int, weights_cache_path: str | None = None) -> PolicySpec:
    """`ours-sized`: warm capacity on with minSlots 0 and maxSlots `most`, so the decision sizes the pool."""
    return revised(with_warm_pool(policy, most, weights_cache_path), warm_capacity={"min_slots": 0})


def run_job(job: WarmJob) -> dict[str, Any]:
    wall0 = time.perf_counter()
    base, wl = _workload(job.scenario, job.cold_start)
    sc = with_pool(base, job.pool, job.prestaged)
    path = PRESTAGE_PATH if job.prestaged is not None and job.pool else None
    sized = job.family == SIZED
    family = "ours" if sized else job.family
    policy = (with_sized_pool if sized else with_warm_pool)(policy_spec(job.policy_file), job.pool, path)
    secondary = SECONDARY.get(job.scenario, {}).get(family, ())
    knob = main_knob(family, secondary, quick=True)

    def evaluate(v: float) -> Point:
        label = ", ".join([knob.label(v)] + [f"{k}={fmt(x)}" for k, x in secondary])
        res = replay(family, v, secondary, sc, wl, policy, label, TARGET)
        return Point(v, res.outcome.attainment, res.outcome.gpu_hours, {**res.to_dict(), "value": v})

    start = float(sc.initial_replicas) if family == "static" else None
    if job.at is not None:  # one setting: a search over the single value it is given
        knob = replace(knob, lo=job.at, hi=job.at)
    found = search(evaluate, knob, TARGET, start=job.at if job.at is not None else start, probe_beyond=False)
    return {"scenario": sc.name, "family": job.family, "pool": job.pool, "secondary": dict(secondary),
            "knob": knob.name, "reached": found.reached, "exact": found.exact, "stopped_by": found.stopped_by,
            "winner": found.best.run, "points": [p.run for p in found.points],
            "wall_seconds": round(time.perf_counter() - wall0, 2)}


def jobs_for(scenarios: Sequence[str], families: Sequence[str], pools: Sequence[int],
             policy_file: str, cold_start: str | None = None, at: float | None = None,
             prestaged: float | None = None) -> list[WarmJob]:
    """Every job; the first and the middle pool sizes of every family first (a partial run still compares).
    `ours-sized` has no pool-0 job (with at most 0 slots it is `ours` at pool 0)."""
    order = sorted(pools, key=lambda p: (p not in (pools[0], pools[len(pools) // 2]), p))
    return [WarmJob(s, f, p, policy_file, cold_start, at, prestaged) for p in order for s in scenarios
            for f in families if not (f == SIZED and p == 0)]


def run_all(jobs: Sequence[WarmJob], workers: int, records_file: Path | None = None) -> list[dict[str, Any]]:
    """Every job's record, in the order of `jobs`; each is also appended to `records_file` (JSON lines) as it
    finishes, so an interrupted run keeps what it measured (`--from-records` renders it)."""
    out: list[dict[str, Any] | None] = [None] * len(jobs)

    def done(i: int, rec: dict[str, Any]) -> None:
        out[i] = rec
        if records_file is not None:
            with records_file.open("a", encoding="utf-8") as f:
                f.write(json.dumps(rec) + "\n")
        print(f"[{sum(r is not None for r in out)}/{len(jobs)}] {rec['scenario']} {rec['family']} pool "
              f"{rec['pool']}: {len(rec['points'])} replays, {rec['wall_seconds']:.0f} s", file=sys.stderr)

    if workers <= 1:
        for i, j in enumerate(jobs):
            done(i, run_job(j))
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            futures = {ex.submit(run_job, j): i for i, j in enumerate(jobs)}
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
    return [r for r in out if r is not None]


def _order(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    fam = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(records, key=lambda r: (r["scenario"], fam.get(r["family"], 99), r["pool"]))


# ---------------------------------------------------------------- rendering


def _cell(rec: dict[str, Any]) -> str:
    w = rec["winner"]
    if not rec["reached"]:
        return f"✗ {100 * w['attainment']:.1f}%"
    warm = w.get("warm_gpu_hours", 0.0)
    share = f" ({100 * warm / w['gpu_hours']:.0f}% warm)" if warm else ""
    return f"{w['gpu_hours']:.2f}{share}"


def table(records: Sequence[dict[str, Any]]) -> str:
    """Per scenario and family: the cheapest setting reaching 99% at each pool size, then its details."""
    pools = sorted({r["pool"] for r in records})
    lines = []
    for name in dict.fromkeys(r["scenario"] for r in records):
        lines += [f"**{name}**: GPU-hours of the cheapest setting reaching 99% (warm share); ✗ = best "
                  "attainment when none did", "",
                  "| family | " + " | ".join(f"pool {p}" for p in pools) + " |",
                  "|---|" + "---|" * len(pools)]
        for fam in dict.fromkeys(r["family"] for r in records if r["scenario"] == name):
            by_pool = {r["pool"]: r for r in records if r["scenario"] == name and r["family"] == fam}
            lines.append(f"| {fam} | " + " | ".join(_cell(by_pool[p]) if p in by_pool else "–" for p in pools)
                         + " |")
        lines += ["", "| family | pool | setting | attainment | GPU-h | warm GPU-h | starts: warm / cached / "
                      "cold | replays |", "|---|---|---|---|---|---|---|---|"]
        for r in records:
            if r["scenario"] != name:
                continue
            w = r["winner"]
            cached = w["cache_hit_starts"] - w["warm_starts"]
            lines.append(f"| {r['family']} | {r['pool']} | {w['setting']} | {100 * w['attainment']:.2f}% | "
                         f"{w['gpu_hours']:.2f} | {w['warm_gpu_hours']:.2f} | {w['warm_starts']} / {cached} / "
                         f"{w['cold_starts']} | {len(r['points'])} |")
        lines.append("")
    return "\n".join(lines)


def plot(name: str, records: Sequence[dict[str, Any]], path: Path) -> Path:
    """One panel per family: attainment vs GPU-hours of every visited setting, one curve per pool size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    recs = [r for r in records if r["scenario"] == name]
    fams = list(dict.fromkeys(r["family"] for r in recs))
    pools = sorted({r["pool"] for r in recs})
    fig, axes = plt.subplots(1, len(fams), figsize=(3.6 * len(fams), 3.6), squeeze=False)
    styles = ["-", "--", "-.", ":", (0, (5, 1))]
    for ax, fam in zip(axes[0], fams, strict=True):
        for i, pool in enumerate(pools):
            rec = next((r for r in recs if r["family"] == fam and r["pool"] == pool), None)
            if rec is None:
                continue
            pts = sorted((p["gpu_hours"], 100 * p["attainment"]) for p in rec["points"])
            alpha = 0.35 + 0.65 * (i + 1) / len(pools)
            ax.plot([x for x, _ in pts], [y for _, y in pts], linestyle=styles[i % len(styles)], marker="o",
                    markersize=3, color=COLORS.get(fam, "tab:purple"), alpha=alpha, label=f"pool {pool}")
            w = rec["winner"]
            if rec["reached"]:
                ax.plot([w["gpu_hours"]], [100 * w["attainment"]], marker="*", markersize=10,
                        color=COLORS.get(fam, "tab:purple"), alpha=alpha)
        ax.axhline(100 * TARGET, color="black", linewidth=0.7, linestyle=":")
        ax.set_title(fam)
        ax.set_xlabel("GPU-hours (warm slots included)")
        ax.set_ylim(max(0.0, min(80.0, ax.get_ylim()[0])), 100.5)
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel("requests within the TTFT SLO (%)")
    fig.suptitle(f"{name}: attainment vs GPU-hours with a warm pool (★ cheapest reaching 99%)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def section(records: Sequence[dict[str, Any]], command: str, plots: Sequence[Path], doc: Path | None) -> str:
    runs = sum(len(r["points"]) for r in records)
    job_wall = sum(r["wall_seconds"] for r in records)
    lines = ["## Warm capacity: placeholder pools with every family", "",
             f"Command: `{command}`  ",
             f"{len(records)} searches, {runs} request-level replays, {job_wall / 60:.0f} min of job wall time "
             "summed over the jobs (on a shared, at times heavily loaded machine). "
             "Each family's main knob is bisected for every pool size (quick brackets, no probe beyond the "
             "boundary); its behaviour knobs are fixed at the winners of the decision-quality bench above. A pool "
             "of N is N placeholders holding one replica's GPUs each, warm at t = 0 and replaced when a replica "
             "takes one; they cost GPU-hours like replicas (docs/warm-capacity-sim.md). Ours keeps the pool at "
             "N through `spec.warmCapacity` (minSlots = maxSlots = N); ours-sized starts from the same N and "
             "lets its decision size the pool within [0, N] (minSlots 0, maxSlots N).", "", table(records)]
    for p in plots:
        rel = p.relative_to(doc.parent) if doc is not None and p.is_relative_to(doc.parent) else p
        lines.append(f"![{p.stem}]({rel.as_posix()})")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulations.warm_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--pools", default=",".join(map(str, POOLS)))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cold-start", choices=COLD_START_NAMES, default=None,
                    help="replay on this cold-start profile instead of each scenario's own")
    ap.add_argument("--at", type=float, default=None,
                    help="replay each family's main knob at this value only, instead of searching it")
    ap.add_argument("--prestaged", type=float, default=None, metavar="SECONDS",
                    help="weights pre-staged on warm slots, loaded from the node's disk in this median time")
    ap.add_argument("--policy", default=None, help="policy file for ours (default: the shipped default policy)")
    ap.add_argument("--json", type=Path, default=None, help="write every record here")
    ap.add_argument("--plots", type=Path, default=None, help="folder for warm-SCENARIO.png")
    ap.add_argument("--doc", type=Path, default=None, help="rewrite the warm-capacity section of this markdown")
    ap.add_argument("--records", type=Path, default=None, help="append each finished job's record here (JSON lines)")
    ap.add_argument("--from-records", type=Path, default=None,
                    help="render these records (JSON lines from --records; every scenario in them) instead of running")
    ap.add_argument("--command", default=None, help="the command to quote in --doc (with --from-records)")
    args = ap.parse_args(argv)
    scenarios = [s for s in args.scenarios.split(",") if s]
    families = [f for f in args.families.split(",") if f]
    bad = [f for f in families if f not in FAMILIES]
    if bad:
        ap.error(f"--families: {', '.join(bad)} unknown; use {', '.join(FAMILIES)}")
    try:
        pools = [int(p) for p in args.pools.split(",") if p]
    except ValueError:
        ap.error("--pools: a comma list of whole numbers, e.g. 0,1,2,4")
    if any(p < 0 for p in pools):
        ap.error("--pools: pool sizes must be ≥ 0")
    if args.prestaged is not None and args.prestaged < 0:
        ap.error("--prestaged: a median load time in seconds, ≥ 0 (e.g. 10)")
    names = [with_pool(_workload(s, args.cold_start)[0], 0, args.prestaged).name  # a bad name fails here
             for s in scenarios]
    if args.from_records is not None:
        lines = args.from_records.read_text(encoding="utf-8").splitlines()
        records = [r for r in map(json.loads, filter(None, lines)) if r["family"] in families and r["pool"] in pools]
        names = list(dict.fromkeys(r["scenario"] for r in records))  # every scenario the records hold
    else:
        jobs = jobs_for(scenarios, families, pools, args.policy or default_policy_file(), args.cold_start,
                        args.at, args.prestaged)
        records = run_all(jobs, args.workers, args.records)
    records = _order(records)
    print(table(records))
    if args.json is not None:
        write_json(args.json, {"target": TARGET, "records": records})
    plots = [plot(n, records, args.plots / f"warm-{_slug(n)}.png") for n in names] if args.plots else []
    if args.doc is not None:
        given = list(sys.argv[1:] if argv is None else argv)
        private = ("--json", "--records", "--from-records", "--command")
        kept = [a for i, a in enumerate(given) if not a.startswith(private)
                and not (i and given[i - 1] in private)]
        command = args.command or " ".join(["python -m simulations.warm_bench", *kept])
        write_markdown_section(args.doc, section(records, command, plots, args.doc), MARK_START, MARK_END)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
