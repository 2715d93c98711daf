"""`inference-autoscaler simulate`: replay a trace through the simulated fleet with ours and baselines.

With no arguments it runs the built-in demo: a bundled 20-minute slice of the Azure code trace (cloned
4×) with the default policy, against hpa, keda, kpa and the oracle, writing plots and an HTML report to
./out/demo.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from autoscaler.policy_loader import PolicyError, load_policy_file
from simulations.autoscalers.registry import parse_baselines
from simulations.errors import SimulationInputError
from simulations.report import print_results
from simulations.scenario import Scenario, TraceSpec, build_workload, bundled_path, load_scenario, scenario_names
from simulations.session import simulate as run_all
from simulations.session import write_reports

DEMO = Scenario(
    name="demo",
    description="Built-in demo: the first 20 minutes of the Azure LLM 2023 code trace (bundled, CC-BY-4.0, "
    "Patel et al., Splitwise, ISCA 2024), each request cloned 4× (1-s bursts of ~270 req/s), typical cold "
    "starts (~3 min), default policy.",
    trace=TraceSpec(format="azure", path="bundled:azure_code_slice.csv", clone=4),
    fidelity="request",
    cold_start="typical",
    initial_replicas=4,
)


@click.command("simulate")
@click.option("--scenario", "scenario_name", metavar="NAME|FILE", help=f"one of: {', '.join(scenario_names())}")
@click.option("--trace", "trace_path", type=click.Path(), help="a trace file (or ServeGen folder) instead")
@click.option("--format", "fmt", type=click.Choice(["azure", "jsonl", "servegen"]), help="format of --trace")
@click.option("--scale", type=float, help="clone factor k (request traces) or rate factor (servegen)")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False), help="policy YAML (default: the shipped one)")
@click.option("--cold-start", type=click.Choice(["warm", "typical", "cold"]), help="cold-start profile")
@click.option("--baselines", default="hpa,keda,kpa,oracle", show_default=True,
              help="comma list of static,hpa,keda,kpa,oracle; NAME:VALUE sets the target (e.g. hpa:16)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="output folder (default ./out/NAME)")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON instead of a table")
def simulate(scenario_name: str | None, trace_path: str | None, fmt: str | None, scale: float | None,
             policy_path: str | None, cold_start: str | None, baselines: str, out_dir: str | None,
             as_json: bool) -> None:
    """Replay a scenario or trace: ours (the default policy) vs baselines; tables, JSON, plots, HTML."""
    if scenario_name and trace_path:
        raise click.UsageError("give --scenario or --trace, not both")
    if scale is not None and not scale > 0:
        raise click.BadParameter("must be > 0 (e.g. --scale 8)", param_hint="--scale")
    try:
        scenario = _scenario(scenario_name, trace_path, fmt, scale)
        if cold_start:
            scenario = scenario.with_cold_start(cold_start)
        jobs = parse_baselines(baselines)
        policy = load_policy_file(policy_path or bundled_path("default-policy.yaml"))[0].spec
        workload = build_workload(scenario)
    except SimulationInputError as e:
        raise click.UsageError(str(e)) from None
    except PolicyError as e:
        raise click.UsageError(f"policy: {e}") from None
    out = Path(out_dir or f"out/{scenario.name}")
    console = Console(stderr=as_json)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True, disable=not sys.stderr.isatty()) as bar:
        task = bar.add_task(f"simulating {scenario.name}", total=1 + len(jobs))
        results = run_all(scenario, workload, policy, jobs,
                          on_done=lambda r: bar.update(task, advance=1, description=f"done: {r.label}"))
    paths = write_reports(scenario, workload, results, out)
    if as_json:
        click.echo(paths["json"].read_text(encoding="utf-8"), nl=False)  # strict JSON (report.write_json)
        return
    print_results(console, f"{scenario.name} ({scenario.cold_start_profile.name} cold starts, "
                  f"TTFT SLO {scenario.slo.ttft_seconds:g} s)", results, scenario.slo.target_attainment)
    console.print(f"wrote {paths['html']}, {paths['json']} and {len(paths) - 2} plots")


def _scenario(name: str | None, trace_path: str | None, fmt: str | None, scale: float | None) -> Scenario:
    if name:
        sc = load_scenario(name)
        if scale is not None:
            key = "clone" if sc.trace.format in ("azure", "jsonl") else "rate_factor"
            sc = sc.model_copy(update={"trace": sc.trace.model_copy(update={key: scale})})
        return sc
    if trace_path:
        p = Path(trace_path)
        kind = fmt or ("servegen" if p.is_dir() else "jsonl" if p.suffix in (".jsonl", ".json") else "azure")
        if kind == "servegen":
            spec = TraceSpec(format="servegen", path=str(p.resolve()), rate_factor=scale or 1.0)
            return Scenario(name=p.name or "trace", trace=spec, fidelity="fluid")
        spec = TraceSpec(format=kind, path=str(p.resolve()), clone=scale)
        return Scenario(name=p.stem or "trace", trace=spec, fidelity="request")
    return DEMO
