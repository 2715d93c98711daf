"""The warm bench end to end on a small scenario: a search per family and pool, the table, the plot and the
markdown section between its own markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulations import warm_bench


@pytest.fixture
def small(tmp_path: Path) -> Path:
    p = tmp_path / "small.yaml"
    p.write_text("name: small\ntrace: {format: flash-crowd, base_rps: 3, burst_factor: 4, burst_start_seconds: 300,"
                 " burst_hold_seconds: 120, duration_seconds: 600}\ninitial_replicas: 1\nmax_replicas: 8\n",
                 encoding="utf-8")
    return p


def test_main_searches_each_pool_and_writes_table_plot_and_section(small: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    doc = tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    doc.write_text("# Benchmarks\n\n<!-- bench:decision-quality:start -->\nkept\n<!-- bench:decision-quality:end -->\n",
                   encoding="utf-8")
    out, lines = tmp_path / "w.json", tmp_path / "w.jsonl"
    rc = warm_bench.main(["--scenarios", str(small), "--families", "static", "--pools", "0,1", "--workers", "1",
                          "--plots", str(doc.parent / "bench"), "--doc", str(doc), "--json", str(out),
                          "--records", str(lines)])
    assert rc == 0
    assert len(lines.read_text().splitlines()) == 2  # one line per finished job
    records = json.loads(out.read_text())["records"]
    by_pool = {r["pool"]: r for r in records}
    assert set(by_pool) == {0, 1}
    cold, warm = by_pool[0]["winner"], by_pool[1]["winner"]
    assert cold["warm_gpu_hours"] == 0 and warm["warm_gpu_hours"] > 0
    assert all(r["reached"] for r in records)
    printed = capsys.readouterr().out
    assert "| static | " in printed and "% warm)" in printed
    text = doc.read_text()
    assert "kept" in text and warm_bench.MARK_START in text and "![warm-small](bench/warm-small.png)" in text
    assert "--json" not in text and (doc.parent / "bench" / "warm-small.png").stat().st_size > 0
    # the records re-render the same table without running anything
    capsys.readouterr()
    assert warm_bench.main(["--scenarios", str(small), "--families", "static", "--pools", "0,1",
                            "--from-records", str(lines)]) == 0
    assert capsys.readouterr().out == printed


def test_unknown_family_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        warm_bench.main(["--families", "oracle"])
    assert "--families: oracle unknown" in capsys.readouterr().err


def test_cold_start_option_replays_on_that_profile_under_its_own_name(small: Path) -> None:
    sc, _ = warm_bench._workload(str(small), "cold")
    assert sc.cold_start_profile.name == "cold" and sc.name == "small (cold starts)"
    assert warm_bench._slug(sc.name) == "small-cold-starts"
    same, _ = warm_bench._workload(str(small), "typical")  # the scenario's own profile: unchanged
    assert same.name == "small"


def test_prestaged_weights_go_to_the_cluster_and_the_name(small: Path) -> None:
    sc, _ = warm_bench._workload(str(small), None)
    pre = warm_bench.with_pool(sc, 2, 10.0)
    assert pre.cluster.warm_slots == 2 and pre.cluster.warm_weight_load_seconds == 10.0
    assert pre.name == "small (weights pre-staged)" and warm_bench.with_pool(sc, 2).name == "small"


def test_negative_prestaged_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        warm_bench.main(["--prestaged", "-1"])
    assert "--prestaged: a median load time in seconds" in capsys.readouterr().err


def test_ours_sized_lets_the_decision_size_the_pool_within_zero_and_n(small: Path, tmp_path: Path) -> None:
    jobs = warm_bench.jobs_for([str(small)], ["ours", "ours-sized"], [0, 2], "p.yaml")
    assert [(j.family, j.pool) for j in jobs] == [("ours", 0), ("ours", 2), ("ours-sized", 2)]  # no sized pool 0
    from simulations.bench import default_policy_file, policy_spec

    spec = policy_spec(default_policy_file())
    w = warm_bench.with_sized_pool(spec, 4, "/cache").warm_capacity
    assert (w.enabled, w.min_slots, w.max_slots, w.weights_cache_path) == (True, 0, 4, "/cache")
    out = tmp_path / "w.json"
    assert warm_bench.main(["--scenarios", str(small), "--families", "ours,ours-sized", "--pools", "2",
                            "--workers", "1", "--at", "0.5", "--json", str(out)]) == 0
    by_family = {r["family"]: r["winner"] for r in json.loads(out.read_text())["records"]}
    fixed, sized = by_family["ours"], by_family["ours-sized"]
    # the fixed pool holds 2 slots for the whole run; the sized one only what its decision keeps (at most 2)
    run_hours = 600 / 3600
    assert fixed["warm_gpu_hours"] == pytest.approx(2 * run_hours, rel=0.02)
    assert 0 <= sized["warm_gpu_hours"] <= fixed["warm_gpu_hours"] + 1e-9
    assert sized["warm_gpu_hours"] != pytest.approx(fixed["warm_gpu_hours"], rel=0.02)
