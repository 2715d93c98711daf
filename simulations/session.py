"""Run one scenario with `ours` and a list of baselines, and write its reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from autoscaler.policy import PolicySpec
from simulations.autoscalers.oracle import run_oracle
from simulations.autoscalers.ours import Ours
from simulations.autoscalers.registry import make_baseline, setting_label
from simulations.decision_log import DecisionLog
from simulations.report import plot_scenario, write_html, write_json
from simulations.runner import RunResult, run
from simulations.scenario import Scenario
from simulations.trace import BinnedWorkload, Trace


def simulate(
    scenario: Scenario,
    workload: Trace | BinnedWorkload,
    policy: PolicySpec | None,
    baselines: Sequence[tuple[str, float | None]],
    on_done: Callable[[RunResult], None] | None = None,
    decisions_path: Path | None = None,
) -> list[RunResult]:
    """Each job's replay, ours first. With `decisions_path`, ours' decision at every tick is written there as
    JSON lines (simulations/decision_log.py)."""
    results = []
    jobs: list[tuple[str, float | None]] = ([("ours", None)] if policy is not None else []) + list(baselines)
    for name, value in jobs:
        if name == "ours":
            assert policy is not None
            if decisions_path is not None:
                with DecisionLog(decisions_path) as log:
                    res = run(scenario, workload, Ours(policy, on_decision=log.write))
            else:
                res = run(scenario, workload, Ours(policy))
        elif name == "oracle":
            res = run_oracle(scenario, workload, scenario.slo.target_attainment)
        else:
            assert value is not None
            res = run(scenario, workload, make_baseline(name, value), setting_label(name, value))
        results.append(res)
        if on_done is not None:
            on_done(res)
    return results


def write_reports(scenario: Scenario, workload: Trace | BinnedWorkload, results: Sequence[RunResult],
                  out_dir: Path, extra: dict[str, Any] | None = None) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = plot_scenario(scenario, workload, results, out_dir)
    json_path = out_dir / f"{scenario.name}.json"
    write_json(json_path, {
        "scenario": scenario.name,
        "cold_start": scenario.cold_start_profile.name,
        "slo_ttft_seconds": scenario.slo.ttft_seconds,
        "requests": results[0].outcome.requests if results else 0,
        **(extra or {}),
        "results": [r.to_dict() for r in results],
    })
    html_path = out_dir / "report.html"
    write_html(html_path, f"inference-autoscaler simulation: {scenario.name}",
               [(scenario.name, scenario.description, results, pngs)])
    return {"json": json_path, "html": html_path, **{p.stem: p for p in pngs}}
