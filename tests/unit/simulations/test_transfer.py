"""Baselines tuned once (benchmarks/transfer.py): which setting is carried over, how it is replayed, the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.transfer import main, settings, summary, table
from simulations.bench import Job, JobError, default_policy_file, run_job


def _search(scenario: str, family: str, value: float, gpu_hours: float, reached: bool,
            secondary: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"scenario": scenario, "family": family, "kind": "search", "secondary": secondary or {},
            "reached": reached, "winner": {"value": value, "gpu_hours": gpu_hours,
                                           "attainment": 0.995 if reached else 0.9}}


def test_the_setting_carried_over_is_each_baselines_cheapest_search_that_reached_the_target() -> None:
    shipped = {"jobs": [
        _search("a", "hpa", 0.3, 50.0, True, {"signal": "queue_p90"}),
        _search("a", "hpa", 40.0, 30.0, True, {"signal": "running"}),
        _search("a", "hpa", 9.0, 10.0, False, {"signal": "waiting"}),  # cheaper, but missed: not a setting
        _search("a", "static", 4.0, 8.0, False),
        _search("a", "ours", 0.8, 5.0, True),  # ours is never carried over: it runs as shipped
        {"scenario": "a", "family": "ours", "kind": "default", "secondary": {}, "reached": True,
         "winner": {"value": None, "gpu_hours": 6.0, "attainment": 0.999}},
    ]}
    assert settings(shipped) == {"a": {"hpa": (40.0, (("signal", "running"),))}}


def _rec(scenario: str, family: str, attainment: float, gpu_hours: float) -> dict[str, Any]:
    return {"scenario": scenario, "family": family, "winner": {"attainment": attainment, "gpu_hours": gpu_hours}}


def test_the_summary_counts_variants_kept_at_99_and_prices_ours_against_the_shipped_seeds_cheapest() -> None:
    recs = [_rec("a~s1", "ours", 0.995, 12.0), _rec("a~s1", "kpa", 0.985, 9.0), _rec("a~s1", "static", 0.992, 10.0),
            _rec("a~d2", "ours", 0.991, 8.0), _rec("a~d2", "kpa", 0.993, 10.0), _rec("a~d2", "static", 0.98, 10.0)]
    lines, text = summary(recs, {"a": "kpa"})
    assert lines[2] == "| a (2) | 2/2 | 1/2 | – | – | 1/2 | kpa | 0.80 (0.80–0.80) | none | – |"
    assert "keeps 99% on 1 of them; ours, never tuned, on 2" in text and "a: kpa 1/2, ours 2/2" in text
    rows = table(recs)
    assert rows[2] == "| a~s1 | 12.00 | 10.00 | – | – | ✗ 98.5% (9.00) |"


def test_ours_is_priced_against_the_cheapest_baseline_that_kept_every_variant_over_the_ones_ours_keeps() -> None:
    recs = [_rec("a~s1", "ours", 0.995, 6.0), _rec("a~s1", "static", 0.992, 10.0), _rec("a~s1", "hpa", 0.999, 8.0),
            _rec("a~s2", "ours", 0.980, 3.0), _rec("a~s2", "static", 0.993, 10.0), _rec("a~s2", "hpa", 0.995, 9.0),
            _rec("a~s3", "ours", 0.996, 6.0), _rec("a~s3", "static", 0.991, 10.0), _rec("a~s3", "hpa", 0.97, 1.0)]
    lines, text = summary(recs, {"a": "hpa"})
    # static kept all three (hpa missed s3); ours kept s1 and s3: 12 GPU-h against static's 20 there
    assert lines[2].endswith("| static | 0.60 (over the 2 ours keeps; it misses 1) |")
    assert "a: hpa 2/3, ours 2/3, ours 0.60× static over the 2 ours keeps" in text


def test_a_fixed_job_replays_the_family_at_the_value_it_is_given(tiny: str) -> None:
    pf = default_policy_file()
    searched = run_job(Job(tiny, "static", "search", (), True, pf))
    for point in searched["points"]:  # every replica count the search visited, replayed on its own
        fixed = run_job(Job(tiny, "static", "fixed", (), True, pf, value=point["value"]))
        assert len(fixed["points"]) == 1 and fixed["winner"]["setting"] == f"replicas={point['value']:g}"
        assert (fixed["winner"]["gpu_hours"], fixed["winner"]["attainment"]) == (point["gpu_hours"],
                                                                                 point["attainment"])
        assert fixed["reached"] == (point["attainment"] >= 0.99)
    with pytest.raises(JobError, match="needs the main knob's value"):
        run_job(Job(tiny, "static", "fixed", (), True, pf))


def test_main_replays_the_shipped_settings_on_each_variant_beside_ours(tiny: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    variants = tmp_path / "v"
    variants.mkdir()
    text = Path(tiny).read_text()
    (variants / "tiny~s1.yaml").write_text(text.replace("name: tiny", "name: tiny~s1\nseed: 101"))
    (variants / "other~s1.yaml").write_text(text.replace("name: tiny", "name: other~s1"))  # not in shipped: skipped
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"jobs": [_search("tiny", "static", 3, 0.5, True)],
                                   "headline": [{"scenario": "tiny", "best_baseline": "static"}]}))
    out = tmp_path / "t.json"
    assert main([str(shipped), str(variants), "--json", str(out), "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    recs = json.loads(out.read_text())["records"]
    assert sorted((r["scenario"], r["family"]) for r in recs) == [("tiny~s1", "ours"), ("tiny~s1", "static")]
    static = next(r for r in recs if r["family"] == "static")
    assert static["kind"] == "fixed" and static["winner"]["setting"] == "replicas=3"
    assert "| tiny (1) |" in printed and "Tuned once, on the shipped seed" in printed


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"jobs": [_search("tiny", "static", 3, 0.5, True)]}))
    assert main([str(shipped), str(tmp_path / "empty")]) == 2
    assert "seed_variants.py write" in capsys.readouterr().err
    shipped.write_text("{not json")
    assert main([str(shipped), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("transfer: ") and err.count("\n") == 1
    shipped.write_text(json.dumps({"jobs": []}))
    assert main([str(shipped), str(tmp_path)]) == 2
    assert "no baseline search reaching 99%" in capsys.readouterr().err


def test_a_saved_run_is_reported_again_without_replaying(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = tmp_path / "shipped.json"
    shipped.write_text(json.dumps({"jobs": [_search("a", "kpa", 100.0, 9.0, True)],
                                   "headline": [{"scenario": "a", "best_baseline": "kpa"}]}))
    saved = tmp_path / "t.json"
    saved.write_text(json.dumps({"records": [_rec("a~s1", "ours", 0.995, 12.0), _rec("a~s1", "kpa", 0.992, 10.0)]}))
    readme = tmp_path / "README.md"
    readme.write_text("x\n<!-- transfer:start -->\nold\n<!-- transfer:end -->\ny\n")
    assert main([str(shipped), "--from", str(saved), "--readme", str(readme)]) == 0
    assert "| a (1) | 1/1 | – | – | – | 1/1 | kpa | 1.20 (1.20–1.20) | kpa | 1.20 |" in capsys.readouterr().out
    text = readme.read_text()
    assert "old" not in text and "keeps 99% on 1 of them; ours, never tuned, on 1" in text
    with pytest.raises(SystemExit):
        main([str(shipped)])  # neither variants nor a saved run
