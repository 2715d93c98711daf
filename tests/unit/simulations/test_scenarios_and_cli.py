"""Scenarios validate strictly; the commands run end to end and fail with usage errors, not tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from autoscaler.cli import main
from simulations.bench import MARK_END, MARK_START, write_markdown_section
from simulations.errors import SimulationInputError
from simulations.scenario import bundled_path, load_scenario, parse_scenario, scenario_names

ROOT = Path(__file__).resolve().parents[3]


def test_the_six_protocol_scenarios_exist_and_validate() -> None:
    names = scenario_names()
    assert set(names) >= {"azure-code", "azure-conv", "servegen-large", "servegen-mid", "flash-crowd", "diurnal"}
    for n in names:
        assert load_scenario(n).name == n


def test_unknown_scenario_key_is_an_error() -> None:
    with pytest.raises(SimulationInputError, match=r"trace.clonez.*unknown key"):
        parse_scenario({"name": "x", "trace": {"format": "azure", "path": "a.csv", "clonez": 3}})


@pytest.mark.parametrize(("data", "field"), [
    ({"name": "x", "trace": {"format": "diurnal"}, "serving": {"prefill_tokens_per_second": 0}}, "serving"),
    ({"name": "x", "trace": {"format": "diurnal"}, "cold_start": {"warmup_seconds": -5}}, "cold_start"),
    ({"name": "x", "trace": {"format": "diurnal"}, "cold_start": "lukewarm"}, "cold_start"),
    ({"name": "x", "trace": {"format": "diurnal"}, "bin_seconds": 1e-9}, "bin_seconds"),
    ({"name": "x", "trace": {"format": "diurnal", "noise_sigma": float("inf")}}, "trace.noise_sigma"),
    ({"name": "x", "trace": {"format": "diurnal"}, "seed": -1}, "seed"),
    ({"name": "x", "trace": {"format": "flash-crowd", "base_rps": 1000, "burst_factor": 100}}, "trace.*a peak of"),
])
def test_impossible_profiles_are_errors(data: dict, field: str) -> None:
    with pytest.raises(SimulationInputError, match=field):
        parse_scenario(data)


def test_shipped_default_policy_equals_the_project_default() -> None:
    assert bundled_path("default-policy.yaml").read_text() == (ROOT / "policies/chat-deployment.yaml").read_text()


def test_demo_runs_end_to_end_and_writes_pngs_html_json(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(main, ["simulate", "--out", str(out), "--baselines", "hpa,oracle"])
    assert result.exit_code == 0, result.output
    assert "ours" in result.output and "oracl" in result.output  # at 80 columns rich cuts "oracle(headroom=…)"
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) == 3
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 3
    data = json.loads((out / "demo.json").read_text())
    assert [r["policy"] for r in data["results"]] == ["ours", "hpa", "oracle"]
    lines = (out / "demo-decisions.jsonl").read_text().splitlines()
    assert len(lines) >= 86400 / 15  # ours' decision at every 15-s tick of the day
    assert {"t", "desired", "reason", "binding", "message", "capacity_factor"} <= json.loads(lines[-1]).keys()
    assert "demo-decisions.jsonl" in result.output
    assert "Where ours' replicas went" in result.output and data["ours_replicas"]["ticks"] >= 86400 / 15


@pytest.mark.parametrize(("args", "message"), [
    (["--scenario", "nope"], "no such scenario"),
    (["--baselines", "hpa,magic"], "unknown baseline"),
    (["--baselines", "keda:abc"], "not a number"),
    (["--scale", "0"], "--scale"),
    (["--duration", "1e400"], "--duration"),  # once read as inf: the whole trace, silently
    (["--duration", "367d"], "--duration"),
    # outside the scenario's bounds: once a 141-TiB numpy allocation, an OverflowError or 'cannot convert float
    # infinity to integer'
    (["--scenario", "azure-conv", "--scale", "1e9"], "'--scale': 1000000000.0 is not in the range 0<x<=1000"),
    (["--scenario", "azure-conv", "--scale", "inf"], "'--scale'"),
    (["--trace", "/nonexistent.csv", "--scale", "1e308"], "'--scale'"),
    (["--trace", "/nonexistent.csv"], "not found"),
])
def test_simulate_bad_input_is_a_usage_error(args: list[str], message: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_simulate_into_a_folder_it_cannot_write_is_a_usage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(main, ["simulate", "--out", str(blocker / "out"), "--baselines", "hpa"])
    assert result.exit_code == 2 and "--out" in result.output and "cannot write there" in result.output
    assert "Traceback" not in result.output


def test_simulate_bad_trace_row_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9,10,oops\n")
    result = CliRunner().invoke(main, ["simulate", "--trace", str(p), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and f"{p}:2" in result.output and "GeneratedTokens" in result.output


@pytest.mark.parametrize(("factor", "field"), [("1e6", "capacity.prompt_tokens_per_second"),
                                               ("inf", "capacity.prompt_tokens_per_second")])
def test_bench_refuses_a_priors_factor_that_takes_a_prior_out_of_its_bounds(factor: str, field: str) -> None:
    # It used to run every job with priors the policy's own bounds refuse.
    result = CliRunner().invoke(main, ["bench", "--quick", "--scenarios", "azure-conv", "--workers", "1",
                                       "--priors-scales", factor])
    assert result.exit_code == 2 and f"priors × {factor.replace('1e6', '1e+06')}: {field}" in result.output
    assert "Traceback" not in result.output


def test_bench_markdown_section_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text(f"# B\n\nother section\n\n{MARK_START}\nold\n{MARK_END}\n\ntail\n")
    write_markdown_section(doc, "new table")
    text = doc.read_text()
    assert "other section" in text and "tail" in text and "new table" in text and "old" not in text
    fresh = tmp_path / "fresh.md"
    write_markdown_section(fresh, "x")
    assert MARK_START in fresh.read_text()
