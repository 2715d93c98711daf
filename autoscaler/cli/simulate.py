"""`inference-autoscaler simulate`: replay a trace through the simulated fleet with ours and baselines.

With no arguments it runs the built-in demo: the first day of the bundled `diurnal` scenario with the
default policy, against hpa, keda, kpa and the oracle; it prints a table, a legend and a verdict, and
writes plots, an HTML report and ours' decision at every tick (`demo-decisions.jsonl`) to ./out/demo.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from autoscaler.cli.params import Number
from autoscaler.policy_loader import PolicyError, load_policy_file
from simulations.autoscalers.registry import parse_baselines
from simulations.decision_log import breakdown
from simulations.errors import SimulationInputError
from simulations.scenario import (
    YEAR,
    Scenario,
    build_workload,
    bundled_path,
    load_scenario,
    parse_scenario,
    revised_scenario,
    scenario_names,
)
from simulations.session import simulate as run_all
from simulations.session import write_reports
from simulations.trace import MAX_CLONE
from simulations.trace_loaders import logical_suffix
from simulations.verdict import render

DEMO_SCENARIO = "diurnal"
DEMO_SECONDS = 86400.0


def demo_scenario() -> Scenario:
    """The built-in demo: the first day of the bundled `diurnal` scenario, where scaling decisions matter
    (a 3× daily swing, cold starts of ~3 min: a static fleet pays for the peak all day, a late one misses)."""
    sc = load_scenario(DEMO_SCENARIO)
    return revised_scenario(
        sc, "the built-in demo", name="demo",
        description=f"Built-in demo: the first day of the bundled {DEMO_SCENARIO!r} scenario. {sc.description}",
        trace={"duration_seconds": DEMO_SECONDS})


@click.command("simulate")
@click.option("--scenario", "scenario_name", metavar="NAME|FILE", help=f"one of: {', '.join(scenario_names())}")
@click.option("--trace", "trace_path", type=click.Path(),
              help="a trace file (may be .gz/.xz) or ServeGen folder instead")
@click.option("--format", "fmt", type=click.Choice(["azure", "jsonl", "servegen"]), help="format of --trace")
@click.option("--scale", type=Number(0, MAX_CLONE, lo_open=True),
              help="clone factor k (request traces) or rate factor (servegen)")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False), help="policy YAML (default: the shipped one)")
@click.option("--cold-start", type=click.Choice(["warm", "typical", "cold"]), help="cold-start profile")
@click.option("--baselines", default="hpa,keda,kpa,oracle", show_default=True,
              help="comma list of static,hpa,keda,kpa,oracle; NAME:VALUE sets the target (e.g. hpa:16)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="output folder (default ./out/NAME)")
@click.option("--duration", metavar="N[s|m|h|d]", help="replay only the first N of the trace (e.g. 30m, 2d)")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON instead of a table")
def simulate(scenario_name: str | None, trace_path: str | None, fmt: str | None, scale: float | None,
             policy_path: str | None, cold_start: str | None, baselines: str, out_dir: str | None,
             duration: str | None, as_json: bool) -> None:
    """Replay a scenario or trace: ours (the default policy) vs baselines; tables, JSON, plots, HTML."""
    if scenario_name and trace_path:
        raise click.UsageError("give --scenario or --trace, not both")
    try:
        scenario = _scenario(scenario_name, trace_path, fmt, scale)
        if cold_start:
            scenario = scenario.with_cold_start(cold_start)
        jobs = parse_baselines(baselines)
        policy = load_policy_file(policy_path or bundled_path("default-policy.yaml"))[0].spec
        workload = build_workload(scenario, limit_seconds=_seconds(duration) if duration else None)
    except SimulationInputError as e:
        raise click.UsageError(str(e)) from None
    except PolicyError as e:
        raise click.UsageError(f"policy: {e}") from None
    out = Path(out_dir or f"out/{scenario.name}")
    decisions = out / f"{scenario.name}-decisions.jsonl"
    try:  # before the replays: a folder that cannot be written fails now, not after minutes of work
        out.mkdir(parents=True, exist_ok=True)
        decisions.touch()
    except OSError as e:
        raise click.BadParameter(f"cannot write there: {e.strerror or e}", param_hint="--out") from None
    console = Console(stderr=as_json)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(f"simulating {scenario.name}", total=1 + len(jobs))
        results = run_all(scenario, workload, policy, jobs,
                          on_done=lambda r: bar.update(task, advance=1, description=f"done: {r.label}"),
                          decisions_path=decisions)
    spent = breakdown(decisions)
    paths = write_reports(scenario, workload, results, out, {"ours_replicas": spent.to_dict()})
    if as_json:
        click.echo(paths["json"].read_text(encoding="utf-8"), nl=False)  # strict JSON (report.write_json)
        return
    click.echo(render(scenario, results))
    if spent.ticks:
        click.echo("\n" + textwrap.fill(spent.describe(), 80, break_long_words=False, break_on_hyphens=False))
    wrote = (f"Wrote to {out}{os.sep}: {paths['html'].name} (report with plots), {paths['json'].name}, "
             f"{len(paths) - 2} PNG plots and {decisions.name} (ours' decision at every tick, with its reasons).")
    click.echo("\n" + "\n".join(textwrap.wrap(wrote, 80, break_long_words=False, break_on_hyphens=False)))


UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _seconds(text: str) -> float:
    """`90`, `90s`, `30m`, `2h`, `1.5d` → seconds."""
    raw = text.strip().lower()
    unit = UNITS.get(raw[-1:])
    number = raw[:-1] if unit is not None else raw
    try:
        value = float(number) * (unit or 1.0)
    except ValueError:
        value = -1.0
    if not 0 < value <= YEAR:  # a trace's own bound (TraceSpec.limit_seconds); NaN and 1e400 (inf) are no duration
        raise click.BadParameter(f"{text!r} is not a duration within (0, 366d]",
                                 param_hint="--duration (e.g. 30m, 2h, 2d)")
    return value


def _scenario(name: str | None, trace_path: str | None, fmt: str | None, scale: float | None) -> Scenario:
    if name:
        sc = load_scenario(name)
        if scale is not None:
            key = "clone" if sc.trace.format in ("azure", "jsonl") else "rate_factor"
            sc = revised_scenario(sc, "--scale", trace={key: scale})
        return sc
    if trace_path:
        p = Path(trace_path)
        kind = fmt or ("servegen" if p.is_dir() else "jsonl" if logical_suffix(p) in (".jsonl", ".json") else "azure")
        if kind == "servegen":
            trace = {"format": "servegen", "path": str(p.resolve()), "rate_factor": scale or 1.0}
            return parse_scenario({"name": p.name or "trace", "trace": trace, "fidelity": "fluid"}, "--trace")
        trace = {"format": kind, "path": str(p.resolve()), "clone": scale}
        return parse_scenario({"name": p.stem or "trace", "trace": trace, "fidelity": "request"}, "--trace")
    return demo_scenario()
