"""The demo's summary explains itself: a table within 80 columns (in a pipe too), a one-line legend, and a
verdict whose words follow from the numbers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simulations.outcome import Outcome
from simulations.runner import RunResult
from simulations.scenario import Scenario, TraceSpec
from simulations.verdict import cold_start_seconds, legend, miss_causes, render, verdict

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = Scenario(name="demo", trace=TraceSpec(format="diurnal"), cold_start="typical")


def result(policy: str, setting: str, attainment: float, gpu_hours: float, missed: list[float] | None = None,
           desired: list[float] | None = None, ready: list[float] | None = None) -> RunResult:
    t = np.arange(0.0, 600.0, 15.0)
    d = np.asarray(desired if desired is not None else [4.0] * len(t))
    r = np.asarray(ready if ready is not None else [4.0] * len(t))
    outcome = Outcome(requests=1000.0, attainment=attainment, ttft_p50_seconds=0.3, ttft_p90_seconds=1.2,
                      ttft_p99_seconds=float("inf"), queue_p99_seconds=123.4, gpu_hours=gpu_hours, scale_events=7)
    return RunResult(policy, setting, outcome, 0.1, t, r, d, np.arange(10) * 60.0, np.ones(10),
                     np.asarray(missed if missed is not None else [], dtype=np.float64))


def test_every_line_fits_80_columns_even_with_long_policy_labels() -> None:
    results = [result("ours", "", 0.995, 10.0),
               result("hpa", "signal=queue_p90,target=2,window=600,stabilization=900", 0.9, 12.0),
               result("oracle", "", 1.0, 8.0)]
    text = render(SCENARIO, results)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text and "stabilization=900" in text  # wrapped, not cut
    assert text.count(legend(2.0)) == 1 and len(legend(2.0)) <= 80


def test_the_verdict_says_met_and_the_cost_against_each_baseline() -> None:
    text = verdict(SCENARIO, [result("ours", "", 0.995, 9.0), result("hpa", "target=32", 0.95, 12.0),
                              result("static", "replicas=8", 0.999, 10.0), result("oracle", "", 1.0, 6.0)])
    assert text.startswith("Ours met the SLO: 99.50% of requests")
    assert "hpa(target=32): 25% fewer GPU-hours and 4.5 points more attainment (95.0%)" in text
    assert "static(replicas=8): 10% fewer GPU-hours and 0.4 points less attainment" in text
    assert "No baseline at these settings met the goal for less" in text and "docs/benchmarks.md" in text
    assert "ours used 1.50× that" in text
    assert "Why: it missed no request, paying 50% more than the oracle" in text


def test_a_cheaper_baseline_that_meets_the_goal_is_named() -> None:
    text = verdict(SCENARIO, [result("ours", "", 0.992, 9.0), result("static", "replicas=6", 0.993, 7.0)])
    assert "static(replicas=6) met the goal for less than ours." in text
    assert "29% more GPU-hours" in text


def test_misses_are_attributed_to_starting_replicas_or_to_not_asking() -> None:
    # desired > ready for the first 300 s (replicas starting), equal after
    n = 40
    desired = [8.0] * 20 + [4.0] * (n - 20)
    ready = [4.0] * n
    ours = result("ours", "", 0.8, 5.0, missed=[10, 20, 30, 400], desired=desired, ready=ready)
    causes = miss_causes(ours, 2.0)
    assert (causes.missed, causes.unit) == (4, "requests")
    assert causes.while_starting == pytest.approx(0.75) and causes.not_asked == pytest.approx(0.25)
    text = verdict(SCENARIO, [ours])
    assert text.startswith("Ours missed the SLO: 80.0%")
    assert "of its 4 missed requests, 75% arrived while replicas it had asked for were still starting" in text
    assert f"cold start ~{cold_start_seconds(SCENARIO.cold_start_profile) / 60:.0f} min" in text
    assert "25% arrived while it had asked for no more replicas than were ready" in text


def test_cold_start_sums_the_stage_medians_of_the_profile() -> None:
    assert cold_start_seconds(SCENARIO.with_cold_start("typical").cold_start_profile) == 180
    assert cold_start_seconds(SCENARIO.with_cold_start("warm").cold_start_profile) == 47
    assert cold_start_seconds(SCENARIO.with_cold_start("cold").cold_start_profile) == 550


@pytest.mark.slow
def test_simulate_output_fits_80_columns_when_piped(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text("name: tiny\ntrace: {format: azure, path: 'bundled:azure_code_slice.csv', clone: 2, "
                        "limit_seconds: 240}\ncold_start: warm\ninitial_replicas: 2\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "autoscaler.cli", "simulate", "--scenario", str(scenario), "--baselines",
         "hpa,oracle", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]
    assert any(line.startswith("ours ") for line in lines) and any(line.startswith("hpa(") for line in lines)
    assert legend(2.0) in lines
    assert any(line.startswith(("Ours met the SLO", "Ours missed the SLO")) for line in lines)


def test_baselines_that_missed_are_explained_by_where_their_misses_fell() -> None:
    starting = [8.0] * 20 + [4.0] * 20
    text = verdict(SCENARIO, [result("ours", "", 0.995, 9.0),
                              result("hpa", "target=32", 0.8, 12.0, missed=[400, 500, 10], desired=starting),
                              result("keda", "threshold=5", 0.7, 12.0, missed=[400, 550], desired=starting),
                              result("kpa", "concurrency=100", 0.6, 12.0, missed=[5, 15, 25], desired=starting)])
    assert ("Most misses of hpa(target=32) (67%) and keda(threshold=5) (100%) came while they had asked for no "
            "more replicas than were ready") in text
    assert "Most misses of kpa(concurrency=100) (100%) came while its new replicas were still starting" in text


def test_a_fluid_run_counts_seconds_with_misses_not_requests() -> None:
    fluid = SCENARIO.model_copy(update={"fidelity": "fluid"})
    text = verdict(fluid, [result("ours", "", 0.9, 5.0, missed=[10, 20, 400])])
    assert "of its 3 seconds of arrivals with misses" in text and "missed requests" not in text
