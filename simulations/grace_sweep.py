"""Requests aborted by scale-downs against the serving side's termination grace period (docs/scale-down.md):
ours (with and without pod-deletion-cost) and the baselines at their default settings, request-level fleet.

    python -m simulations.grace_sweep --scenario azure-code --duration 2h --grace 0,30,200

A grace of 0 is a pod without the documented drain (vLLM aborts what runs at SIGTERM); 200 s is the
example's. Prints one line per (grace, policy): attainment, GPU-hours, aborted requests, scale events.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

import simulations.runner as runner
from autoscaler.policy import PolicySpec, revised
from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.ours import Ours
from simulations.autoscalers.registry import make_baseline, parse_baselines, setting_label
from simulations.fleet import RequestFleet
from simulations.scenario import build_workload, bundled_path, load_scenario


@contextmanager
def grace(seconds: float) -> Iterator[None]:
    """Every request-level fleet the runner makes in this block gets `seconds` of termination grace."""
    make = runner.make_fleet

    def with_grace(*args: Any, **kw: Any) -> Any:
        fleet = make(*args, **kw)
        if isinstance(fleet, RequestFleet):
            fleet.termination_grace_seconds = seconds
        return fleet

    runner.make_fleet = with_grace
    try:
        yield
    finally:
        runner.make_fleet = make


def without_deletion_cost(policy: PolicySpec) -> PolicySpec:
    return revised(policy, scale_down={"deletion_cost": False})


def sweep(scenario: str, hours: float, graces: Sequence[float], baselines: str = "hpa,keda,kpa") -> list[str]:
    sc = load_scenario(scenario)
    wl = build_workload(sc, limit_seconds=hours * 3600)
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    lines = []
    for g in graces:
        with grace(g):
            runs = [("ours", runner.run(sc, wl, Ours(policy))),
                    ("ours, deletionCost off", runner.run(sc, wl, Ours(without_deletion_cost(policy))))]
            for name, value in parse_baselines(baselines):
                assert value is not None
                runs.append((name, runner.run(sc, wl, make_baseline(name, value), setting_label(name, value))))
        for label, r in runs:
            o = r.outcome
            lines.append(f"{scenario} grace={g:g}s | {label:22s} | attainment {100 * o.attainment:6.2f}% | "
                         f"GPU-h {o.gpu_hours:6.2f} | aborted {o.aborted:5.0f} | scale events {o.scale_events}")
    return lines


@click.command()
@click.option("--scenario", required=True)
@click.option("--duration", default="2h", show_default=True, help="hours, e.g. 2h")
@click.option("--grace", "graces", default="0,30,200", show_default=True, help="seconds, comma-separated")
def main(scenario: str, duration: str, graces: str) -> None:
    hours = float(duration.rstrip("h"))
    for line in sweep(scenario, hours, [float(g) for g in graces.split(",")]):
        click.echo(line)


if __name__ == "__main__":
    main()
