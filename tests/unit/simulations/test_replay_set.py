"""The replay set (benchmarks/replay_set.py): which replays it runs, what it saves, how two runs compare."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.replay_set import cells, compare, load, main, noise, table, with_settings
from benchmarks.seed_variants import write, write_days


def test_cells_are_each_shipped_scenario_with_variants_then_its_draws_then_its_days(tmp_path: Path) -> None:
    write(tmp_path, [100, 200])
    write_days(tmp_path, [10, 2])
    for p in tmp_path.glob("*.yaml"):
        if not p.name.startswith(("servegen-mid~", "diurnal~")):
            p.unlink()
    assert cells(tmp_path) == [
        ("diurnal", ""), ("diurnal", "s1"), ("diurnal", "s2"),
        ("servegen-mid", ""), ("servegen-mid", "s1"), ("servegen-mid", "s2"), ("servegen-mid", "d2"),
        ("servegen-mid", "d10"),
    ]


def test_cells_of_a_folder_without_variants_name_the_command_that_writes_them(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"replay_set\.py write"):
        cells(tmp_path)


A = {("azure-conv", ""): (0.995, 5.0), ("azure-conv", "s1"): (0.992, 4.0), ("azure-conv", "s2"): (0.989, 4.4),
     ("servegen-mid", ""): (0.999, 100.0), ("servegen-mid", "d2"): (0.991, 200.0)}


def test_compare_counts_the_replays_at_99_and_the_cost_ratio_per_group_and_names_the_crossings() -> None:
    b = {**A, ("azure-conv", "s1"): (0.985, 3.0), ("azure-conv", "s2"): (0.993, 4.4),
         ("servegen-mid", "d2"): (0.991, 220.0), ("diurnal", ""): (0.999, 1.0)}  # diurnal only in b: left out
    lines = compare(A, b, ("K", "L"))
    assert lines[0].startswith("| scenario (replays) | at 99%: K → L | GPU-h L ÷ K")
    rows = {line.split(" | ")[0]: line for line in lines[2:]}
    assert set(rows) == {"| azure-conv (3)", "| servegen-mid (2)", "| all (5)"}
    crossed = "draw 1 99.20% → 98.50%; draw 2 98.90% → 99.30%"
    assert f"| 2 → 2 | 1.000 (0.750–1.000) | {crossed} |" in rows["| azure-conv (3)"]
    assert "| 2 → 2 | 1.050 (1.000–1.100) | – |" in rows["| servegen-mid (2)"]
    assert "| 4 → 4 |" in rows["| all (5)"]
    # Mean attainment and total GPU-hours: what a group did, whichever replays sit either side of 99%.
    assert lines[0].endswith("| mean attainment K → L | GPU-h total L ÷ K |")
    assert rows["| azure-conv (3)"].endswith("| 99.200% → 99.100% | 0.925 |")
    assert rows["| servegen-mid (2)"].endswith("| 99.500% → 99.500% | 1.067 |")
    assert rows["| all (5)"].endswith("| 99.320% → 99.260% | 1.061 |")
    near = compare(A, {**A, ("azure-conv", ""): (0.989996, 5.0)})[2]
    assert "shipped seed 99.50% → 98.9996%" in near  # two decimals would read 99.00%: on the other side


def test_compare_refuses_files_that_share_no_replay() -> None:
    with pytest.raises(ValueError, match="share no replay"):
        compare(A, {("diurnal", ""): (1.0, 1.0)})


def _saved(path: Path, replays: list[dict]) -> str:
    path.write_text(json.dumps({"policy": "p.yaml", "priors_scale": 1.0, "replays": replays}))
    return str(path)


@pytest.mark.parametrize("body", ["not json", '{"replays": [{"scenario": "x"}]}', '{"other": 1}', "[]"])
def test_load_names_the_file_and_the_command_that_writes_it(body: str, tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text(body)
    with pytest.raises(ValueError, match=r"bad\.json: not a `replay_set.py run --json` file") as e:
        load(str(p))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("att, gpu", [(1.5, 1.0), (-0.1, 1.0), (0.99, float("nan")), (0.99, -1.0)])
def test_load_refuses_values_no_replay_can_have(att: float, gpu: float, tmp_path: Path) -> None:
    p = _saved(tmp_path / "x.json", [{"scenario": "azure-conv", "variant": "s1", "attainment": att, "gpu_hours": gpu}])
    with pytest.raises(ValueError, match="azure-conv~s1"):
        load(p)


def test_compare_command_exits_2_with_one_line_on_a_bad_file(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    good = _saved(tmp_path / "good.json", [{"scenario": "azure-conv", "variant": "", "attainment": 0.99,
                                           "gpu_hours": 5.0}])
    (tmp_path / "bad.json").write_text("{")
    assert main(["compare", good, str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("replay_set: ") and err.count("\n") == 1


def test_run_saves_every_replay_and_a_run_compared_with_itself_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, [100])
    for p in tmp_path.glob("*.yaml"):
        if p.name != "azure-conv~s1.yaml":
            p.unlink()
    out = tmp_path / "run.json"
    assert main(["run", str(tmp_path), "--json", str(out), "--workers", "1"]) == 0
    saved = json.loads(out.read_text())
    assert [(r["scenario"], r["variant"]) for r in saved["replays"]] == [("azure-conv", ""), ("azure-conv", "s1")]
    assert all(0 < r["attainment"] <= 1 and r["gpu_hours"] > 0 for r in saved["replays"])
    assert saved["replays"][0] != saved["replays"][1]  # another draw, another outcome
    assert "replays reach 99%; written to" in capsys.readouterr().out
    lines = compare(load(str(out)), load(str(out)))
    assert "| 1.000 (1.000–1.000) | – |" in lines[2]


@pytest.mark.parametrize("bad", ["0", "nan", "inf", "100"])
def test_run_refuses_a_priors_scale_outside_its_range(bad: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["run", str(tmp_path), "--json", str(tmp_path / "x.json"), f"--priors-scale={bad}"])
    assert e.value.code == 2 and "--priors-scale" in capsys.readouterr().err


def test_run_on_a_folder_without_variants_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path), "--json", str(tmp_path / "x.json"), "--workers", "1"]) == 2
    assert "replay_set.py write" in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_table_prints_one_row_per_run_against_the_first_over_the_replays_all_hold() -> None:
    b = {**A, ("azure-conv", "s1"): (0.985, 3.0), ("servegen-mid", "d2"): (0.991, 220.0), ("diurnal", ""): (1.0, 1.0)}
    lines = table([("K", A), ("L", b)])
    assert lines[0] == "| run | at 99% (of 5) | azure-conv | servegen-mid |"  # diurnal: only in L, left out
    assert lines[2] == "| K | 4 | 2/3, 1.000×, 99.20% | 2/2, 1.000×, 99.50% |"
    # L: azure-conv s1 under 99% and 1 GPU-hour cheaper (12.4 ÷ 13.4), servegen-mid d2 20 dearer (320 ÷ 300)
    assert lines[3] == "| L | 3 | 1/3, 0.925×, 98.97% | 2/2, 1.067×, 99.50% |"
    with pytest.raises(ValueError, match="share no replay"):
        table([("K", A), ("M", {("diurnal", ""): (1.0, 1.0)})])


def test_table_command_takes_labels_or_file_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = [{"scenario": "azure-conv", "variant": "", "attainment": 0.995, "gpu_hours": 5.0}]
    k, l_ = _saved(tmp_path / "K.json", rec), _saved(tmp_path / "L.json", rec)
    assert main(["table", k, f"forecast off={l_}"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2].startswith("| K | 1 |") and rows[3] == "| forecast off | 1 | 1/1, 1.000×, 99.50% |"
    assert main(["table", k, str(tmp_path / "missing.json")]) == 2
    assert "missing.json: not a `replay_set.py run --json` file" in capsys.readouterr().err


def test_with_settings_changes_one_field_and_writes_a_policy_that_loads(tmp_path: Path) -> None:
    from simulations.bench import default_policy_file, policy_spec

    out = with_settings(default_policy_file(), ["capacity.sloFeedback.enabled=false", "forecast.quantile=0.8"],
                        tmp_path / "p.yaml")
    shipped, changed = policy_spec(default_policy_file()), policy_spec(out)
    assert not changed.capacity.slo_feedback.enabled and changed.forecast.quantile == 0.8
    assert shipped.capacity.slo_feedback.enabled and shipped.forecast.quantile == 0.9
    # every other field as shipped
    assert changed.model_copy(update={"capacity": shipped.capacity, "forecast": shipped.forecast}) == shipped


@pytest.mark.parametrize("bad, says", [
    ("forecast.enabld=false", "spec.forecast.enabld: unknown field"),
    ("forecast.quantile=2", "spec.forecast.quantile"),
    ("novalue", "expected PATH=VALUE"),
    ("replicas.min.x=1", "not a mapping"),
    ("forecast.quantile=[", "not YAML"),
])
def test_with_settings_names_the_setting_and_writes_nothing_on_a_bad_one(bad: str, says: str,
                                                                        tmp_path: Path) -> None:
    from simulations.bench import default_policy_file

    with pytest.raises(ValueError, match=says) as e:
        with_settings(default_policy_file(), [bad], tmp_path / "p.yaml")
    assert str(e.value).startswith("--set ") and "\n" not in str(e.value)
    assert list(tmp_path.iterdir()) == []


def test_run_with_a_bad_setting_exits_2_before_replaying(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, [100])
    out = tmp_path / "x.json"
    assert main(["run", str(tmp_path), "--json", str(out), "--set", "forecast.enabld=false"]) == 2
    assert "spec.forecast.enabld" in capsys.readouterr().err and not out.exists()


def test_run_with_a_setting_replays_the_changed_policy_and_keeps_it_beside_the_json(tmp_path: Path) -> None:
    write(tmp_path, [100])
    keep = tmp_path / "azure-conv~s1.yaml"
    for p in tmp_path.glob("*.yaml"):
        if p != keep:
            p.unlink()
    shipped, changed = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["run", str(tmp_path), "--json", str(shipped), "--workers", "1"]) == 0
    assert main(["run", str(tmp_path), "--json", str(changed), "--workers", "1",
                 "--set", "forecast.enabled=false"]) == 0
    saved = json.loads(changed.read_text())
    assert saved["settings"] == ["forecast.enabled=false"] and saved["policy"] == str(tmp_path / "b.policy.yaml")
    assert "enabled: false" in (tmp_path / "b.policy.yaml").read_text()
    assert load(str(shipped)) != load(str(changed))  # the forecast orders replicas on azure-conv: off, it differs


def test_shipped_table_is_each_scenarios_shipped_seed_run_by_run() -> None:
    from benchmarks.replay_set import shipped_table

    b = {**A, ("azure-conv", ""): (0.989996, 4.0)}
    lines = shipped_table([("K", A), ("L", b)])
    assert lines[0] == "| run | azure-conv | servegen-mid |"
    assert lines[2:] == ["| K | 5.00 (99.50%) | 100.00 (99.90%) |", "| L | 4.00 (98.9996%) | 100.00 (99.90%) |"]


@pytest.mark.parametrize("body", ["a: [", "spec: {}\n---\nspec: {}\n", "- 1\n"])
def test_with_settings_refuses_a_policy_file_that_is_not_one_document(body: str, tmp_path: Path) -> None:
    src = tmp_path / "p.yaml"
    src.write_text(body)
    with pytest.raises(ValueError, match=r"p\.yaml: not one") as e:
        with_settings(str(src), ["forecast.enabled=false"], tmp_path / "out.yaml")
    assert "\n" not in str(e.value) and not (tmp_path / "out.yaml").exists()


def test_noise_counts_what_moved_by_how_much_and_what_crossed_99_against_the_base() -> None:
    near = {**A, ("azure-conv", "s1"): (0.992, 4.2),  # +5%: moved by more than 1%
            ("servegen-mid", ""): (0.999, 100.5),  # +0.5%: moved, within 1%
            ("servegen-mid", "d2"): (0.989, 200.0)}  # crossed 99% at the same cost
    lines, summary = noise(A, [("×1.0001", near), ("same", dict(A))])
    assert lines[0].startswith("| run | replays moved | by > 1% of GPU-h | GPU-h ratio range | at 99%")
    assert lines[2] == ("| ×1.0001 | 3 of 5 | 1 | 1.000–1.050 | 4 → 3 | servegen-mid day 2 99.10% → 98.90% | "
                        f"{(5 + 4.2 + 4.4 + 100.5 + 200) / 313.4:.4f} |")
    assert lines[3] == "| same | 0 of 5 | 0 | – | 4 → 4 | – | 1.0000 |"
    assert "2 runs against the run at the priors unmoved) moves 0–3 of the 5 replays, 0–1 of them" in summary
    assert "(ratios 1.00–1.05)" in summary and "by up to 1 (servegen-mid day 2 99.10% → 98.90%)" in summary


def test_noise_command_writes_its_summary_between_the_readme_markers(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    def save(name: str, replays: dict[tuple[str, str], tuple[float, float]]) -> str:
        p = tmp_path / name
        p.write_text(json.dumps({"replays": [{"scenario": n, "variant": v, "attainment": a, "gpu_hours": g}
                                             for (n, v), (a, g) in replays.items()]}), encoding="utf-8")
        return str(p)
    base, near = save("base.json", A), save("near.json", {**A, ("azure-conv", ""): (0.995, 5.5)})
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- noise:start -->\nold\n<!-- noise:end -->\nrest\n", encoding="utf-8")
    assert main(["noise", base, f"x1.0001={near}", "--readme", str(readme)]) == 0
    out = capsys.readouterr().out
    assert "| x1.0001 | 1 of 5 | 1 | 1.100–1.100 | 4 → 4 | – |" in out
    text = readme.read_text(encoding="utf-8")
    assert "old" not in text and "moves 1 of the 5 replays, 1 of them by more than 1%" in text
    assert text.startswith("intro\n<!-- noise:start -->\n") and text.endswith("<!-- noise:end -->\nrest\n")
    readme.write_text("no markers\n", encoding="utf-8")
    assert main(["noise", base, near, "--readme", str(readme)]) == 2
    assert "add the lines <!-- noise:start -->" in capsys.readouterr().err
