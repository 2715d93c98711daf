"""Seed variants of the bench scenarios: same scenario, another draw; and the table that compares them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchmarks.seed_variants import main, multi_day, ours_table, summary, table, write, write_days, write_readme
from simulations.scenario import bench_scenario_names, build_workload, load_scenario
from simulations.trace import BinnedWorkload


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


def test_day_variants_are_later_days_of_the_multi_day_scenarios_only(tmp_path: Path) -> None:
    paths = write_days(tmp_path, [2, 7])
    multi = [n for n in bench_scenario_names() if multi_day(n)]
    assert {"servegen-large", "servegen-mid"} <= set(multi) and "azure-conv" not in multi and "diurnal" not in multi
    assert sorted(p.name for p in paths) == sorted(f"{n}~d{d}.yaml" for n in multi for d in (2, 7))
    for name in multi:
        shipped = load_scenario(name)
        day7 = load_scenario(str(tmp_path / f"{name}~d7.yaml"))
        assert day7.trace.start_seconds == 6 * 86400 and day7.name == f"{name}~d7"
        same = day7.model_copy(update={"name": name, "initial_replicas": shipped.initial_replicas,
                                       "trace": day7.trace.model_copy(update={"start_seconds": 0.0})})
        assert same == shipped


def test_each_day_starts_as_far_from_its_load_as_the_shipped_day() -> None:
    """Servegen-large's fifth midnight needs 21 replicas where the first needs 16: it starts with 12 × 21 / 16."""
    from benchmarks.seed_variants import start_need

    shipped = load_scenario("servegen-large")
    day5 = shipped.model_copy(update={"trace": shipped.trace.model_copy(update={"start_seconds": 4 * 86400.0})})
    assert (start_need(shipped), start_need(day5)) == (16, 21)


def test_a_day_variant_replays_that_day_of_the_trace(tmp_path: Path) -> None:
    write_days(tmp_path, [2, 5])
    assert load_scenario(str(tmp_path / "servegen-large~d5.yaml")).initial_replicas == 16  # round(12 × 21 / 16)
    shipped = build_workload(load_scenario("servegen-mid"), 86400 + 3600)
    day2 = build_workload(load_scenario(str(tmp_path / "servegen-mid~d2.yaml")), 3600)
    assert isinstance(day2, BinnedWorkload) and isinstance(shipped, BinnedWorkload)
    assert list(day2.counts) == list(shipped.counts[86400:])


@pytest.mark.parametrize("bad", ["1", "15", "2,x", ""])
def test_write_refuses_days_outside_the_traces(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["write", str(tmp_path), f"--days={bad}"])
    assert e.value.code == 2 and "--days" in capsys.readouterr().err


def test_ours_alone_on_day_variants_runs_only_the_scenarios_that_have_them(tmp_path: Path) -> None:
    from simulations.bench import default_policy_file

    write_days(tmp_path, [2])
    for p in tmp_path.glob("*.yaml"):
        if not p.name.startswith("servegen-mid~"):
            p.unlink()
    lines = ours_table(tmp_path, default_policy_file(), workers=1)
    assert lines[0] == "| scenario | shipped seed | day 2 |"
    assert len(lines) == 3 and lines[2].startswith("| servegen-mid | ")


def _row(name: str, ours: dict, static_gpu: float) -> dict:
    """A bench headline row as `simulations.bench` writes it: static the cheapest baseline, oracle at 50."""
    reached = ours["reached"]
    return {"scenario": f"/x/{name}~s1.yaml", "best_baseline": "static",
            "ours_over_best_baseline": ours["gpu_hours"] / static_gpu if reached else None,
            "ours_over_oracle": ours["gpu_hours"] / 50.0 if reached else None,
            "families": {"ours": ours, "static": {"reached": True, "gpu_hours": static_gpu},
                         "oracle": {"reached": True, "gpu_hours": 50.0}}}


def test_table_puts_each_draw_in_its_own_column(tmp_path: Path) -> None:
    def run(ours: dict, static_gpu: float) -> dict:
        return {"headline": [_row("diurnal", ours, static_gpu)]}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(run({"reached": True, "gpu_hours": 80.0, "attainment": 0.995}, 100.0)))
    b.write_text(json.dumps(run({"reached": False, "gpu_hours": 70.0, "attainment": 0.984}, 100.0)))
    lines = table([str(a), str(b)])
    assert lines[0] == "| scenario | a | b |"
    assert lines[2] == "| diurnal | 80.00 (0.80× static, 1.60× oracle) | ✗ 98.4% |"


def _bench(tmp_path: Path, name: str, cells: dict[str, tuple[bool, float, float]]) -> str:
    """A bench --json with one row per scenario: ours (reached, attainment, GPU-h) against static at 100."""
    rows = [_row(n, {"reached": r, "attainment": a, "gpu_hours": g}, 100.0) for n, (r, a, g) in cells.items()]
    path = tmp_path / name
    path.write_text(json.dumps({"headline": rows}))
    return str(path)


def test_summary_sorts_scenarios_by_how_many_draws_reach_99(tmp_path: Path) -> None:
    a = _bench(tmp_path, "a.json", {"diurnal": (True, 0.995, 80.0), "flash": (False, 0.84, 20.0),
                                    "cold": (True, 0.991, 120.0)})
    b = _bench(tmp_path, "b.json", {"diurnal": (True, 0.996, 95.0), "flash": (False, 0.82, 20.0),
                                    "cold": (False, 0.989, 110.0)})
    text = summary([a, b])
    assert "Run on 2 draws" in text
    assert "reaches 99% on every draw of diurnal at 0.80–0.95×" in text
    assert "misses it on 1 of 2 draws of cold (98.9%)" in text
    assert "misses it on every draw of flash" in text


def test_readme_summary_goes_between_the_markers_and_nothing_else_changes(tmp_path: Path) -> None:
    a = _bench(tmp_path, "a.json", {"diurnal": (True, 0.995, 80.0)})
    readme = tmp_path / "README.md"
    readme.write_text("top\n<!-- seeds:start -->\nold words\n<!-- seeds:end -->\nbottom\n")
    assert main(["table", a, "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith("top\n<!-- seeds:start -->\nThese verdicts")
    assert text.endswith("<!-- seeds:end -->\nbottom\n")
    assert "old words" not in text
    bare = tmp_path / "BARE.md"
    bare.write_text("no markers\n")
    with pytest.raises(ValueError, match="seeds:start"):
        write_readme(bare, "x")
    assert main(["table", a, "--readme", str(bare)]) == 2 and bare.read_text() == "no markers\n"


def test_ours_alone_runs_the_shipped_scenario_and_each_draw_in_its_own_column(tmp_path: Path) -> None:
    from simulations.bench import default_policy_file

    write(tmp_path, [100])
    lines = ours_table(tmp_path, default_policy_file(), workers=1, names=["azure-conv"])
    assert lines[0] == "| scenario | shipped seed | variant s1 |"
    cells = lines[2].split(" | ")
    assert cells[0] == "| azure-conv" and len(cells) == 3
    assert all("%" in c for c in cells[1:]) and cells[1] != cells[2]  # another draw, another outcome


def test_ours_alone_scales_the_priors_as_the_bench_priors_rows_do(tmp_path: Path) -> None:
    from simulations.bench import default_policy_file

    write(tmp_path, [100])
    shipped = ours_table(tmp_path, default_policy_file(), workers=1, names=["azure-conv"])
    low = ours_table(tmp_path, default_policy_file(), workers=1, names=["azure-conv"], priors_scale=0.7)
    assert low[:2] == shipped[:2] and low[2] != shipped[2]  # same columns, other outcomes


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf", "100"])
def test_ours_alone_refuses_a_priors_scale_outside_its_range(bad: str, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["ours", str(tmp_path), f"--priors-scale={bad}"])
    assert e.value.code == 2 and "--priors-scale" in capsys.readouterr().err


def test_ours_alone_names_the_missing_draw_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, [100, 200])
    (tmp_path / "diurnal~s1.yaml").unlink()
    assert main(["ours", str(tmp_path), "--workers", "1"]) == 2
    assert "diurnal~s1.yaml" in capsys.readouterr().err


def _day_json(path: Path, cells: dict[tuple[str, int], tuple[bool, float, float]]) -> str:
    """A bench --json over day variants: (scenario, day) -> (reached, attainment, GPU-h); static costs 100."""
    rows = []
    for (name, day), (reached, att, gpu) in cells.items():
        row = _row(name, {"reached": reached, "attainment": att, "gpu_hours": gpu}, 100.0)
        row["scenario"] = f"/x/{name}~d{day}.yaml"
        rows.append(row)
    path.write_text(json.dumps({"headline": rows}))
    return str(path)


def test_days_table_puts_each_day_in_its_own_column_and_the_summary_counts_wins_and_losses(tmp_path: Path) -> None:
    from benchmarks.seed_variants import days_summary, days_table

    f = _day_json(tmp_path / "days.json", {
        ("servegen-mid", 2): (True, 0.995, 80.0), ("servegen-mid", 3): (True, 0.993, 120.0),
        ("servegen-mid", 4): (False, 0.985, 90.0), ("servegen-large", 3): (True, 0.999, 70.0)})
    lines = days_table(f)
    assert lines[0] == "| scenario | day 2 | day 3 | day 4 |"
    mid = next(x for x in lines if x.startswith("| servegen-mid |")).split(" | ")
    assert mid[1].startswith("80.00 (0.80× static") and mid[2].startswith("120.00 (1.20×") and mid[3] == "✗ 98.5% |"
    large = next(x for x in lines if x.startswith("| servegen-large |")).split(" | ")
    assert large[1] == "–" and large[2].startswith("70.00")
    text = days_summary(f)
    assert ("servegen-mid: 99% on 2 of 3 days, median 1.00× the day's cheapest tuned baseline "
            "(≤ 0.85× on 1, above 1× on 1)") in text
    assert text.startswith("On 4 days")


def test_days_summary_goes_between_the_days_markers_only(tmp_path: Path) -> None:
    f = _day_json(tmp_path / "days.json", {("servegen-mid", 2): (True, 0.995, 80.0)})
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- seeds:start -->\nS\n<!-- seeds:end -->\n"
                      "<!-- days:start -->\nold\n<!-- days:end -->\nz\n")
    assert main(["days", f, "--readme", str(readme)]) == 0
    doc = readme.read_text()
    assert "\nS\n" in doc and "old" not in doc and doc.endswith("<!-- days:end -->\nz\n")
    assert "servegen-mid: 99% on 1 of 1 days" in doc


def test_days_of_a_json_without_day_variants_is_a_one_line_error(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "seeds.json"
    row = _row("diurnal", {"reached": True, "attainment": 1.0, "gpu_hours": 1.0}, 2.0)
    f.write_text(json.dumps({"headline": [row]}))
    assert main(["days", str(f)]) == 2
    assert "no day variants" in capsys.readouterr().err


def test_table_of_a_missing_or_foreign_json_is_a_one_line_error(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A draw's bench still running (its --json not written yet) or a file of another kind: one line, exit 2."""
    f = tmp_path / "shipped.json"
    f.write_text(json.dumps({"headline": [_row("diurnal", {"reached": True, "attainment": 1.0, "gpu_hours": 1.0},
                                               2.0)]}))
    assert main(["table", str(f), str(tmp_path / "s2.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "s2.json" in err
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"replays": []}))
    assert main(["table", str(f), str(other)]) == 2
    assert "other.json: no headline rows; pass the file a `bench --json` wrote" in capsys.readouterr().err
