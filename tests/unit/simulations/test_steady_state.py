"""steady_state: ours replayed day after day with the core's memory carried, beside the fresh replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchmarks.steady_state import chain, days_of, jobs_for, main, table
from simulations.autoscalers.ours import Ours
from simulations.bench import default_policy_file, load_replay, policy_spec
from simulations.runner import run
from simulations.scenario import scenario_dir

HOURS = 7200.0


def _day(tmp: Path, n: int) -> str:
    """servegen-mid cut into two-hour 'days': day n starts (n - 1) × 2 h into the trace."""
    data = yaml.safe_load((scenario_dir() / "servegen-mid.yaml").read_text(encoding="utf-8"))
    data["name"] = f"servegen-mid~d{n}"
    data["trace"] = {**data["trace"], "start_seconds": (n - 1) * HOURS}
    data["quick_limit_seconds"] = HOURS
    path = tmp / f"servegen-mid~d{n}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return str(path)


def test_the_fresh_replay_is_the_benchs_and_the_carried_one_starts_from_the_day_befores_memory(
        tmp_path: Path) -> None:
    days = [(1, _day(tmp_path, 1)), (2, _day(tmp_path, 2))]
    name, rows = chain(("servegen-mid", days, 1.0, None))
    assert name == "servegen-mid" and [r[0] for r in rows] == [1, 2]
    policy = policy_spec(default_policy_file())
    fresh: list[Ours] = []
    for _, path in days:
        sc, wl = load_replay(path, True, "fluid")
        fresh.append(Ours(policy))
        out = run(sc, wl, fresh[-1]).outcome
        assert (out.attainment, out.gpu_hours) in {(r[1], r[2]) for r in rows}  # fresh is the plain replay
    assert rows[0][1:3] == rows[0][3:5]  # day 1: both start from nothing
    # Carried: day 2 starts from day 1's state, so its forecaster holds both days' buckets.
    sc, wl = load_replay(days[1][1], True, "fluid")
    carried = Ours(policy, state=fresh[0].state)
    out = run(sc, wl, carried).outcome
    assert (out.attainment, out.gpu_hours) == rows[1][3:5]
    assert carried.state.forecast is not None and fresh[1].state.forecast is not None
    assert len(carried.state.forecast.history) > len(fresh[1].state.forecast.history) + 100


def test_each_replay_can_leave_its_decision_log_and_logging_changes_no_replay(tmp_path: Path) -> None:
    days = [(1, _day(tmp_path, 1)), (2, _day(tmp_path, 2))]
    plain = chain(("servegen-mid", days, 1.0, None))
    logged = chain(("servegen-mid", days, 1.0, tmp_path / "logs"))
    assert logged == plain
    written = sorted(p.name for p in (tmp_path / "logs").iterdir())
    # Day 1 is one replay (both start from nothing): its carried log only.
    assert written == ["servegen-mid-d1-carried.jsonl", "servegen-mid-d2-carried.jsonl", "servegen-mid-d2-fresh.jsonl"]
    ticks = HOURS / 15.0  # one decision per 15-s tick
    for name in written:
        lines = (tmp_path / "logs" / name).read_text(encoding="utf-8").splitlines()
        assert abs(len(lines) - ticks) <= 2
        assert all(json.loads(line)["capacity_factor"] > 0 for line in lines)
    carried = [json.loads(x) for x in (tmp_path / "logs" / written[1]).read_text(encoding="utf-8").splitlines()]
    fresh = [json.loads(x) for x in (tmp_path / "logs" / written[2]).read_text(encoding="utf-8").splitlines()]
    assert carried != fresh  # day 2 carried starts from day 1's memory, fresh from nothing


def test_days_limits_each_chain_to_its_first_days(tmp_path: Path) -> None:
    for n in (2, 3, 9):
        (tmp_path / f"servegen-mid~d{n}.yaml").write_text("{}", encoding="utf-8")
    (job,) = jobs_for(tmp_path, ["servegen-mid", "diurnal"], 0.7, days=3, logs=tmp_path / "l")
    assert job[0] == "servegen-mid" and [d for d, _ in job[1]] == [1, 2, 3]
    assert job[2:] == (0.7, tmp_path / "l")
    assert [d for d, _ in jobs_for(tmp_path, ["servegen-mid"], 1.0)[0][1]] == [1, 2, 3, 9]


def test_days_are_read_in_order_after_the_shipped_day(tmp_path: Path) -> None:
    for n in (10, 2, 9):
        (tmp_path / f"servegen-mid~d{n}.yaml").write_text("{}", encoding="utf-8")
    (tmp_path / "servegen-mid~s1.yaml").write_text("{}", encoding="utf-8")  # a draw, not a day
    assert [d for d, _ in days_of(tmp_path, "servegen-mid")] == [1, 2, 9, 10]
    assert days_of(tmp_path, "servegen-mid")[0] == (1, "servegen-mid")


def test_the_table_counts_days_at_99_and_compares_the_later_days() -> None:
    rows = [(1, 0.995, 10.0, 0.995, 10.0), (2, 0.985, 20.0, 0.992, 22.0), (3, 0.999, 30.0, 0.999, 27.0)]
    lines = table([("x", rows)], per_day=True)
    assert lines[2] == "| x | 3 | 2 → 3 | 60.00 | 59.00 | 0.983 | 0.980 |"
    assert lines[4] == "| x day 2 | | 98.50% → 99.20% | 20.00 | 22.00 | 1.100 | |"


@pytest.mark.parametrize(("args", "message"), [
    (["DIR", "--priors-scale", "-1"], "argument --priors-scale: '-1' is not a finite number in [0.1, 10]"),
    (["DIR"], "no day variants"),
    (["DIR", "--days", "1"], "argument --days: '1' is not in 2..366"),
])
def test_bad_input_names_itself(args: list[str], message: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path) if a == "DIR" else a for a in args])
    assert e.value.code == 2 and message in capsys.readouterr().err
