"""The bench as jobs: same records on any number of workers, the same one-line error from a failing
job, files only where asked, and a headline that reports losses and a broken oracle as plainly as wins."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from autoscaler.cli import main
from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.registry import make_baseline
from simulations.bench import (
    Job,
    JobError,
    command_line,
    default_policy_file,
    headline,
    jobs_for,
    load_replay,
    run_job,
    run_jobs,
    scaled_priors,
)
from simulations.bench_report import markdown, readme_summary
from simulations.runner import run


def strict_loads(text: str) -> Any:
    def bad(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=bad)


def _strip_times(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items() if k not in ("wall_seconds", "cpu_seconds")}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    return clean(recs)


def test_records_do_not_depend_on_the_number_of_workers(tiny: str) -> None:
    jobs = [j for j in jobs_for([tiny], True, default_policy_file(), ()) if j.family in ("ours", "static", "hpa")]
    one = run_jobs(jobs, workers=1)
    two = run_jobs(jobs, workers=2)
    assert _strip_times(one) == _strip_times(two)
    static = next(r for r in one if r["family"] == "static")
    assert static["reached"] and static["exact"]  # one replica fewer was run and missed
    n = static["winner"]["value"]
    assert any(p["value"] == n - 1 and p["attainment"] < 0.99 for p in static["points"]) or n == 1


def test_a_failing_job_is_one_line_the_same_with_any_workers(tiny: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(tiny).read_text().replace("bundled:azure_code_slice.csv", str(tmp_path / "missing.csv")))
    outs = []
    for w in ("1", "2"):
        res = CliRunner().invoke(main, ["bench", "--quick", "--scenarios", str(bad), "--workers", w])
        assert res.exit_code == 2 and "Traceback" not in res.output
        outs.append(res.output.strip().splitlines()[-1])
    assert outs[0] == outs[1] and "missing.csv" in outs[0] and "not found" in outs[0]


def test_job_errors_survive_pickling() -> None:
    e = JobError("tiny: hpa search: ValueError: boom", "Traceback ...", user_error=False)
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == "tiny: hpa search: ValueError: boom" and back.detail == "Traceback ..."
    with pytest.raises(JobError, match="no such scenario"):
        run_job(Job("no-such-scenario", "static", "search", (), True, default_policy_file()))


def test_bench_writes_nothing_without_doc_and_strict_json_and_plots_where_asked(tiny: str, tmp_path: Path) -> None:
    runner = CliRunner()
    with runner.isolated_filesystem(temp_dir=tmp_path) as cwd:
        res = runner.invoke(main, ["bench", "--quick", "--scenarios", tiny, "--workers", "1"])
        assert res.exit_code == 0, res.output
        assert list(Path(cwd).iterdir()) == []  # nothing written without --doc/--json/--out
        assert "tiny" in res.output and "replays" in res.output
        doc, readme = Path(cwd) / "docs" / "b.md", Path(cwd) / "R.md"
        readme.write_text("# x\n\n## Results so far\n\n<!-- bench:results-so-far:start -->\nold\n"
                          "<!-- bench:results-so-far:end -->\n\n## Next\n")
        res = runner.invoke(main, ["bench", "--quick", "--scenarios", tiny, "--workers", "1", "--json", "b.json",
                                   "--doc", str(doc), "--readme", str(readme), "--out", "o"])
        assert res.exit_code == 0, res.output
        data = strict_loads((Path(cwd) / "b.json").read_text())
        assert data["headline"][0]["scenario"] == "tiny"
        assert {r["family"] for r in data["jobs"]} == {"ours", "static", "hpa", "keda", "kpa", "oracle"}
        text = doc.read_text()
        assert "bench:decision-quality:start" in text and "bench/tiny-frontier.png" in text
        assert (doc.parent / "bench" / "tiny-frontier.png").stat().st_size > 1000
        r = readme.read_text()
        assert "old" not in r and "## Next" in r and "scenarios" in r
        assert (Path(cwd) / "o" / "bench-runs.csv").exists()
        strict_loads((Path(cwd) / "o" / "bench-runs.json").read_text())
        assert "b.json" not in text and "--out" not in text  # private output paths stay out of the docs
        doc.unlink()
        res = runner.invoke(main, ["bench", "--from-json", "b.json", "--doc", str(doc)])
        assert res.exit_code == 0, res.output
        assert doc.read_text().split("Machine:")[0] == text.split("Machine:")[0]  # same command and table


def test_the_recorded_command_drops_private_output_paths() -> None:
    assert command_line(["--quick", "--json", "/tmp/x.json", "--out=/tmp/o", "--doc", "docs/b.md"]) == \
        "inference-autoscaler bench --quick --doc docs/b.md"


def _rec(family: str, att: float, gpu: float, kind: str = "search", scale: float = 1.0,
         setting: str = "") -> dict[str, Any]:
    w = {"attainment": att, "gpu_hours": gpu, "setting": setting, "value": 1.0}
    return {"scenario": "s", "family": family, "kind": kind, "secondary": {}, "priors_scale": scale,
            "fleet_mode": "fluid", "winner": w, "points": [w], "runs": 1, "exact": True, "monotone": True,
            "stopped_by": ""}


def test_headline_reports_a_loss_and_flags_an_oracle_that_is_not_a_bound() -> None:
    recs = [_rec("ours", 0.995, 12.0, "default"), _rec("ours", 0.97, 9.0, "default", 0.7),
            _rec("static", 0.992, 10.0, setting="replicas=19"), _rec("hpa", 0.999, 11.0),
            _rec("keda", 0.80, 30.0), _rec("kpa", 0.991, 20.0), _rec("oracle", 0.995, 10.5),
            _rec("ours", 0.99, 9.5)]
    [row] = headline(recs)
    assert row["best_baseline"] == "static" and row["ours_over_best_baseline"] == pytest.approx(1.2)
    # the oracle's plans include every constant plan: static's 10 GPU-h is its own; only ours_tuned beats it
    assert row["families"]["oracle"]["gpu_hours"] == 10.0 and "constant plan" in row["families"]["oracle"]["setting"]
    assert row["oracle_broken"] and set(row["oracle_beaten_by"]) == {"ours_tuned"}
    assert not row["families"]["keda"]["reached"]
    md = markdown([row], recs, "inference-autoscaler bench --quick", True, 60.0)
    assert "**loss**: 1.20× static" in md and "not a bound" in md and "✗ 80.0%" in md
    summary = readme_summary([row], "inference-autoscaler bench --quick")
    assert "costlier in 1: s (evaluation only) (1.20× static)" in summary
    assert "cheaper than the cheapest tuned baseline in 0" in summary
    assert "ours costs 1.20–1.20× where it reaches 99% (s 1.20×)" in summary


def test_a_family_and_signal_the_fluid_fleet_is_not_validated_for_is_refused_on_a_fluid_scenario() -> None:
    job = Job("servegen-mid", "hpa", "search", (("signal", "waiting"),), True, default_policy_file())
    with pytest.raises(JobError, match="not validated for this family and signal"):
        run_job(job)


def test_curves_compared_count_the_baseline_steps_ours_reaches_for_no_more_cost() -> None:
    ours = {**_rec("ours", 0.99, 10.0), "points": [{"attainment": 0.95, "gpu_hours": 8.0, "setting": ""},
                                                   {"attainment": 0.99, "gpu_hours": 10.0, "setting": ""}]}
    static = {**_rec("static", 0.99, 12.0), "points": [{"attainment": 0.5, "gpu_hours": 4.0, "setting": ""},
                                                       {"attainment": 0.96, "gpu_hours": 9.0, "setting": ""},
                                                       {"attainment": 0.999, "gpu_hours": 12.0, "setting": ""}]}
    recs = [_rec("ours", 0.99, 10.0, "default"), ours, static]
    [row] = headline(recs)
    md = markdown([row], recs, "x", True, 60.0)
    # static's step at 9 GPU-h (96%) beats ours' best within 9 (95%); at 12 (99.9%) ours' best is 99%: 0 of 2,
    # and its 4-GPU-h step is cheaper than anything ours ran
    assert "| s | 0/2 (+1 cheaper than ours) | – | – | – |" in md


def test_a_verdict_a_nudge_of_the_priors_flips_is_marked_not_robust_wherever_it_is_told() -> None:
    recs = [_rec("ours", 0.9999, 284.21, "default"), _rec("ours", 0.98958, 289.73, "default", 0.9999),
            _rec("ours", 0.9958, 286.04, "default", 1.0001), _rec("ours", 0.995, 270.0, "default", 0.7),
            _rec("static", 0.995, 384.0, setting="replicas=16"), _rec("oracle", 0.995, 231.0)]
    [row] = headline(recs)
    assert row["fragile"] == ["0.9999"]  # ×1.0001 also reaches 99%: the same verdict, no flip
    md = markdown([row], recs, "x", True, 60.0)
    assert "**win**: 0.74× static, not robust: ✗ 98.96% with every prior ×0.9999 |" in md
    # the priors table shows both nudges beside the shipped run, a miss to two decimals (99.0% would hide it)
    assert "| s | 270.00 | ✗ 98.96% | 284.21 | 286.04 | – | – |" in md
    assert "| scenario | priors ×0.7 | priors ×0.9999 | as shipped | priors ×1.0001 | priors ×1.3 | ours tuned |" in md
    summary = readme_summary([row], "x")
    assert "s (evaluation only) (0.74× static, not robust: ✗ 98.96% with every prior ×0.9999)" in summary
    steady = [r for r in recs if r["priors_scale"] != 0.9999]
    [row] = headline(steady)
    assert row["fragile"] == [] and ", not robust:" not in markdown([row], steady, "x", True, 60.0)


def test_the_bench_runs_ours_at_the_nudged_priors_as_well_as_at_30_percent_off() -> None:
    scales = sorted(j.priors_scale for j in jobs_for(["diurnal"], True, default_policy_file())
                    if j.family == "ours" and j.kind == "default")
    assert scales == [0.7, 0.9999, 1.0, 1.0001, 1.3]


def test_headline_gives_no_ratio_and_says_why_when_ours_misses() -> None:
    [row] = headline([_rec("ours", 0.95, 5.0, "default"), _rec("static", 0.995, 8.0), _rec("oracle", 0.999, 4.0)])
    assert row["ours_over_best_baseline"] is None and "does not reach" in row["ours_over_best_baseline_null_reason"]
    assert "does not reach" in row["ours_over_oracle_null_reason"]
    assert not row["oracle_broken"]
    assert "short of 99% in 1: s (evaluation only) (95.0%)" in readme_summary([row], "x")


def test_priors_scale_multiplies_every_stated_prior() -> None:
    spec = load_policy_file(default_policy_file())[0].spec
    s = scaled_priors(spec, 0.7)
    assert s.capacity.prompt_tokens_per_second == pytest.approx(0.7 * spec.capacity.prompt_tokens_per_second)
    assert s.capacity.generation_tokens_per_second == pytest.approx(0.7 * spec.capacity.generation_tokens_per_second)
    assert s.cold_start.warmup_seconds == pytest.approx(0.7 * spec.cold_start.warmup_seconds)
    assert s.cold_start.node_provisioning_seconds == pytest.approx(0.7 * spec.cold_start.node_provisioning_seconds)
    assert s.capacity.target_utilization == spec.capacity.target_utilization


def test_every_default_prior_is_a_cited_value_not_a_simulator_constant() -> None:
    from simulations.profiles import COLD_START_PROFILES, ServingProfile

    spec = load_policy_file(default_policy_file())[0].spec
    doc = (Path(__file__).resolve().parents[3] / "docs" / "priors.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line.split("|")[2].strip().replace(",", "")
            for line in doc.splitlines() if line.startswith("| `")}
    stated = {"promptTokensPerSecond": spec.capacity.prompt_tokens_per_second,
              "generationTokensPerSecond": spec.capacity.generation_tokens_per_second,
              "schedulingSeconds": spec.cold_start.scheduling_seconds,
              "nodeProvisioningSeconds": spec.cold_start.node_provisioning_seconds,
              "imagePullSeconds": spec.cold_start.image_pull_seconds,
              "weightLoadSeconds": spec.cold_start.weight_load_seconds,
              "warmupSeconds": spec.cold_start.warmup_seconds}
    for name, value in stated.items():
        assert float(rows[name]) == value, f"{name}: policy {value}, docs/priors.md {rows.get(name)}"
    sim = ServingProfile()
    assert spec.capacity.prompt_tokens_per_second != sim.prefill_tokens_per_second
    typical = COLD_START_PROFILES["typical"]
    assert (spec.cold_start.node_provisioning_seconds, spec.cold_start.weight_load_seconds,
            spec.cold_start.warmup_seconds) != (typical.node_provisioning_seconds, typical.weight_load_seconds,
                                                typical.warmup_seconds)


def test_the_headline_says_how_many_requests_scale_downs_aborted_where_they_are_counted() -> None:
    recs = [_rec("ours", 0.995, 12.0, "default"), _rec("static", 0.992, 10.0, setting="replicas=19"),
            _rec("hpa", 0.999, 11.0, setting="target=0.7"), _rec("oracle", 0.995, 10.5)]
    recs[0]["winner"].update(aborted=0.0, aborted_counted=True)
    recs[2]["winner"].update(aborted=1234.0, aborted_counted=True)  # static stays fluid: not counted
    md = markdown(headline(recs), recs, "x", True, 60.0)
    line = next(x for x in md.splitlines() if x.startswith("| s | 0 |"))
    assert line.split(" | ")[1:4] == ["0", "–", "1,234"]


def test_a_floor_set_on_ours_holds_its_replicas_in_the_shipped_run_and_in_its_search(tiny: str) -> None:
    pf = default_policy_file()
    shipped = run_job(Job(tiny, "ours", "default", (), True, pf))["winner"]
    floored = run_job(Job(tiny, "ours", "default", (("min_replicas", 5),), True, pf))["winner"]
    sc, wl = load_replay(tiny, True, "request")
    five = run(sc, wl, make_baseline("static", 5), "static").outcome.gpu_hours  # 5 replicas for the whole run
    assert floored["setting"] == "min_replicas=5"
    assert floored["gpu_hours"] >= five - 1e-6 > shipped["gpu_hours"]
    searched = run_job(Job(tiny, "ours", "search", (("min_replicas", 5),), True, pf))
    assert all(p["gpu_hours"] >= five - 1e-6 for p in searched["points"])
    assert all(p["setting"].endswith("min_replicas=5") for p in searched["points"])
