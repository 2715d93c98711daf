"""`inference-autoscaler bench`: the decision-quality benchmark over all scenarios (protocol §4–5).

Prints the table; writes files only where asked: `--json FILE` (everything, strict JSON), `--out DIR`
(every replay as CSV + JSON, and the frontier plots), `--doc FILE` (the markdown section, plots next to
it under `bench/`), `--readme FILE` (the "Results so far" section).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table

from autoscaler.cli.params import BENCH_WORKERS, count
from autoscaler.policy_loader import PolicyError, load_policy_file
from simulations.bench import (
    BASELINES,
    PRIORS_SCALES,
    Job,
    JobError,
    command_line,
    default_policy_file,
    headline,
    jobs_for,
    machine,
    run_jobs,
    write_markdown_section,
)
from simulations.bench_report import (
    display,
    frontier_plot,
    markdown,
    readme_summary,
    verdict,
    with_infeasible_share,
    write_runs,
)
from simulations.errors import SimulationInputError
from simulations.executors import RayUnavailable
from simulations.report import write_json
from simulations.scenario import bench_scenario_names, scenario_names

README_START = "<!-- bench:results-so-far:start -->"
README_END = "<!-- bench:results-so-far:end -->"


def _scales(text: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: write comma-separated factors, e.g. 0.7,1.3",
                                 param_hint="--priors-scales") from None
    if any(not v > 0 for v in vals):
        raise click.BadParameter("factors must be > 0, e.g. 0.7,1.3", param_hint="--priors-scales")
    return vals


@click.command("bench")
@click.option("--quick", is_flag=True, help="shorter traces, coarser brackets, behaviour knobs at defaults (CI)")
@click.option("--scenarios", default="", help="comma list of names or scenario YAML files (default: all)")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False), help="policy YAML (default: the shipped one)")
@click.option("--workers", default=2, show_default=True, type=count(1, BENCH_WORKERS))
@click.option("--ray", "ray_address", metavar="ADDRESS",
              help="run on Ray (optional extra '.[ray]'): a cluster address, 'auto', or 'local' (see docs/ray.md)")
@click.option("--priors-scales", default=",".join(f"{k:g}" for k in PRIORS_SCALES), show_default=True,
              help="extra runs of ours with every prior multiplied by each factor ('' for none)")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="write every job and the table here")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="write every replay (CSV+JSON) and plots here")
@click.option("--doc", "doc_path", type=click.Path(dir_okay=False),
              help="rewrite this markdown file's decision-quality section (plots go to bench/ beside it)")
@click.option("--readme", "readme_path", type=click.Path(dir_okay=False),
              help="rewrite this README's 'Results so far' section")
@click.option("--from-json", "from_json", type=click.Path(dir_okay=False, exists=True),
              help="render the table and documents from a previous --json instead of running")
def bench(quick: bool, scenarios: str, policy_path: str | None, workers: int, priors_scales: str,
          json_path: str | None, out_dir: str | None, doc_path: str | None, readme_path: str | None,
          from_json: str | None, ray_address: str | None) -> None:
    """Every scenario × (ours as shipped, and searched static/hpa/keda/kpa/oracle): cost to reach 99%."""
    if from_json:
        try:
            saved = json.loads(Path(from_json).read_text(encoding="utf-8"))
            records, wall, quick, command = saved["jobs"], saved["wall_seconds"], saved["quick"], saved["command"]
        except (ValueError, KeyError, TypeError) as e:
            raise click.BadParameter(f"not a bench --json file ({e})", param_hint="--from-json") from None
        _render(records, wall, quick, command, None, out_dir, doc_path, readme_path, 0)
        return
    names = [s.strip() for s in scenarios.split(",") if s.strip()] or bench_scenario_names()
    unknown = [n for n in names if n not in scenario_names() and not Path(n).is_file()]
    if unknown:
        raise click.BadParameter(f"unknown scenario(s) {', '.join(unknown)}; use {', '.join(scenario_names())} "
                                 "or a YAML file", param_hint="--scenarios")
    policy_file = policy_path or default_policy_file()
    try:
        load_policy_file(policy_file)
        jobs = jobs_for(names, quick, policy_file, _scales(priors_scales))
    except SimulationInputError as e:
        raise click.UsageError(str(e)) from None
    except PolicyError as e:
        raise click.UsageError(f"policy: {e}") from None
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    t0 = time.perf_counter()
    err.print(f"bench: {len(jobs)} jobs on {workers} worker(s){' (quick)' if quick else ''}")

    done = [0]

    def progress(i: int, job: Job, rec: dict[str, Any]) -> None:
        done[0] += 1
        w = rec["winner"]
        err.print(f"[{done[0]}/{len(jobs)} {time.perf_counter() - t0:5.0f} s] {job.title}: "
                  f"{w['setting'] or 'as shipped'} → {100 * w['attainment']:.2f}% at {w['gpu_hours']:.2f} GPU-h "
                  f"({rec['runs']} runs, {rec['wall_seconds']:.0f} s)")

    try:
        records = run_jobs(jobs, workers, on_done=progress, ray_address=ray_address)
    except RayUnavailable as e:
        raise click.UsageError(str(e)) from None
    except JobError as e:
        if e.user_error:
            raise click.UsageError(e.message) from None
        if e.detail:
            err.print(e.detail, markup=False)
        raise click.ClickException(e.message) from None
    wall = time.perf_counter() - t0
    _render(records, wall, quick, command_line(), json_path, out_dir, doc_path, readme_path, workers)


def _render(records: list[dict[str, Any]], wall: float, quick: bool, command: str, json_path: str | None,
            out_dir: str | None, doc_path: str | None, readme_path: str | None, workers: int) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    table = with_infeasible_share(headline(records), records)
    _print_table(Console(), table, quick)
    cpu = sum(r.get("cpu_seconds", 0.0) for r in records)
    print(f"{len(records)} jobs, {sum(r['runs'] for r in records)} replays in {wall:.0f} s wall"
          + (f" ({workers} worker(s), {machine()['cpus']} CPUs)" if workers else "")
          + f"; {cpu:.0f} CPU-seconds in the jobs")
    if json_path:
        write_json(Path(json_path), {"machine": machine(), "quick": quick, "command": command,
                                     "wall_seconds": wall, "cpu_seconds": cpu, "headline": table,
                                     "jobs": records})
    if out_dir:
        paths = write_runs(Path(out_dir), records)
        for row in table:
            paths.append(frontier_plot(row["scenario"], records, Path(out_dir) / f"{row['scenario']}-frontier.png"))
        err.print(f"wrote {len(paths)} files to {out_dir}")
    if doc_path:
        doc = Path(doc_path)
        plots = {}
        for row in table:
            rel = f"bench/{row['scenario']}-frontier.png"
            frontier_plot(row["scenario"], records, doc.parent / rel)
            plots[row["scenario"]] = rel
        write_markdown_section(doc, markdown(table, records, command, quick, wall, plots))
        err.print(f"updated {doc_path} and {len(plots)} plots in {doc.parent / 'bench'}")
    if readme_path:
        write_markdown_section(Path(readme_path), readme_summary(table, command), README_START, README_END)
        err.print(f"updated {readme_path}")


def _short(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _print_table(console: Console, table: list[dict[str, Any]], quick: bool) -> None:
    out = Table(title=f"GPU-hours to keep 99% of requests within the TTFT SLO{' (quick)' if quick else ''}; "
                "lower is better, ✗ = never reached (best attainment)", box=box.SIMPLE_HEAD, padding=(0, 1))
    for col in ("scenario", "ours", *BASELINES, "oracle", "÷best", "infeasible"):
        out.add_column(col, justify="left" if col == "scenario" else "right", no_wrap=True)
    for row in table:
        f = row["families"]

        def cell(name: str, f: dict[str, Any] = f) -> str:
            v = f.get(name)
            if v is None:
                return "–"
            return _short(v["gpu_hours"]) if v["reached"] else f"[red]✗{math.floor(100 * v['attainment']):.0f}%[/]"

        rb = row["ours_over_best_baseline"]
        oracle = cell("oracle") + ("[red]⚠[/]" if row["oracle_broken"] else "")
        out.add_row(row["scenario"], *(cell(n) for n in ("ours", *BASELINES)), oracle,
                    f"{rb:.2f}" if rb is not None else "–", f"{100 * row.get('infeasible_share', 0.0):.1f}%")
    console.print(out)
    console.print("÷best = ours / the cheapest tuned baseline (< 1: ours is cheaper)", highlight=False)
    for row in table:
        console.print(f"{row['scenario']}: {verdict(row).replace('**', '')}", highlight=False)
    if any(r["oracle_broken"] for r in table):
        console.print("⚠ = the oracle is not a lower bound there: "
                      + "; ".join(f"{r['scenario']}: {', '.join(display(b) for b in r['oracle_beaten_by'])}"
                                  for r in table if r["oracle_broken"]), highlight=False)
    sys.stdout.flush()
