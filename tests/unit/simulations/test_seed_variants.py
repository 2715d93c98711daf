"""Seed variants of the bench scenarios: same scenario, another draw; and the table that compares them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from benchmarks.seed_variants import table, write
from simulations.scenario import bench_scenario_names, load_scenario


def test_variants_differ_from_the_shipped_scenario_in_seed_and_name_only(tmp_path: Path) -> None:
    paths = write(tmp_path, [100, 200])
    assert len(paths) == 2 * len(bench_scenario_names())
    for name in bench_scenario_names():
        shipped = load_scenario(name)
        for k, off in ((1, 100), (2, 200)):
            variant = load_scenario(str(tmp_path / f"{name}~s{k}.yaml"))
            assert variant.seed == shipped.seed + off and variant.name == f"{name}~s{k}"
            assert variant.model_copy(update={"seed": shipped.seed, "name": name}) == shipped
    assert yaml.safe_load(paths[0].read_text())["seed"] != 0


def test_table_puts_each_draw_in_its_own_column(tmp_path: Path) -> None:
    def run(ours: dict, static_gpu: float) -> dict:
        return {"headline": [{"scenario": "/x/diurnal~s1.yaml", "families": {
            "ours": ours, "static": {"reached": True, "gpu_hours": static_gpu},
            "oracle": {"reached": True, "gpu_hours": 50.0}}}]}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(run({"reached": True, "gpu_hours": 80.0, "attainment": 0.995}, 100.0)))
    b.write_text(json.dumps(run({"reached": False, "gpu_hours": 70.0, "attainment": 0.984}, 100.0)))
    lines = table([str(a), str(b)])
    assert lines[0] == "| scenario | a | b |"
    assert lines[2] == "| diurnal | 80.00 (0.80× static, 1.60× oracle) | ✗ 98.4% |"
