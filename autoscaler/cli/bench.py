"""`inference-autoscaler bench`: the decision-quality benchmark over all scenarios (protocol §5)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from simulations.bench import (
    command_line,
    default_policy_file,
    headline,
    jobs_for,
    machine,
    markdown,
    run_jobs,
    write_markdown_section,
)
from simulations.errors import SimulationInputError
from simulations.executors import RayUnavailable
from simulations.report import write_json
from simulations.scenario import scenario_names


@click.command("bench")
@click.option("--quick", is_flag=True, help="shorter traces and fewer sweep points (CI)")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="write all runs and the headline here")
@click.option("--scenarios", default="", help="comma list (default: all)")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False), help="policy YAML (default: the shipped one)")
@click.option("--workers", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--ray", "ray_address", metavar="ADDRESS",
              help="run on Ray (optional extra '.[ray]'): a cluster address, 'auto', or 'local' (see docs/ray.md)")
@click.option("--doc", "doc_path", default="docs/benchmarks.md", show_default=True, type=click.Path(dir_okay=False),
              help="markdown file whose decision-quality section is rewritten ('' to skip)")
def bench(quick: bool, json_path: str | None, scenarios: str, policy_path: str | None, workers: int,
          doc_path: str, ray_address: str | None) -> None:
    """All scenarios × (ours, oracle, swept static/hpa/keda/kpa): cost to reach 99% SLO attainment."""
    names = [s.strip() for s in scenarios.split(",") if s.strip()] or scenario_names()
    unknown = [n for n in names if n not in scenario_names()]
    if unknown:
        raise click.BadParameter(f"unknown scenario(s) {', '.join(unknown)}; use {', '.join(scenario_names())}",
                                 param_hint="--scenarios")
    try:
        jobs = jobs_for(names, quick, policy_path or default_policy_file())
    except SimulationInputError as e:
        raise click.UsageError(str(e)) from None
    console = Console()
    t0 = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task("bench", total=len(jobs))
        try:
            rows = run_jobs(jobs, workers, ray_address=ray_address, on_done=lambda r: bar.update(
                task, advance=1, description=f"{r['scenario']}: {r['policy']} {r['setting']}"))
        except (SimulationInputError, RayUnavailable) as e:
            raise click.UsageError(str(e)) from None
    table = headline(rows)
    out = Table(title=f"cost to reach 99% attainment (GPU-hours){' — quick' if quick else ''}")
    for col in ("scenario", "ours", "static", "hpa", "keda", "kpa", "oracle", "ours/best", "ours/oracle"):
        out.add_column(col, justify="left" if col == "scenario" else "right")
    for row in table:
        f = row["families"]

        def cell(name: str, f: dict[str, Any] = f) -> str:
            v = f.get(name)
            if v is None:
                return "–"
            return f"{v['gpu_hours']:.2f}" if v["reached"] else f"[red]✗ {100 * v['attainment']:.1f}%[/]"

        rb, ro = row.get("ours_over_best_baseline"), row.get("ours_over_oracle")
        out.add_row(row["scenario"], *(cell(n) for n in ("ours", "static", "hpa", "keda", "kpa", "oracle")),
                    f"{rb:.2f}" if rb else "–", f"{ro:.2f}" if ro else "–")
    console.print(out)
    console.print(f"{len(jobs)} runs in {time.perf_counter() - t0:.0f} s on {machine()['cpus']} CPUs")
    if json_path:
        write_json(Path(json_path), {"machine": machine(), "quick": quick, "command": command_line(),
                                     "headline": table, "runs": rows})
    if doc_path:
        write_markdown_section(Path(doc_path), markdown(table, command_line(), quick))
        console.print(f"updated {doc_path}")
