from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from autoscaler.cli.forecast_eval import forecast_eval


def _csv(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "series.csv"
    p.write_text(body)
    return p


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(forecast_eval, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    code, out = _run("--series", str(tmp_path / "nope.csv"), "--horizon", "600")
    assert code == 2 and "nope.csv" in out and "no such file" in out


def test_non_numeric_cell_names_file_line_and_column(tmp_path: Path) -> None:
    p = _csv(tmp_path, "t,rps\n0,1\n60,abc\n")
    code, out = _run("--series", str(p), "--horizon", "60")
    assert code == 2 and "series.csv:3" in out and "'rps'" in out and "abc" in out


def test_unsorted_times_say_to_sort(tmp_path: Path) -> None:
    p = _csv(tmp_path, "t,rps\n0,1\n120,2\n60,3\n")
    code, out = _run("--series", str(p), "--horizon", "60")
    assert code == 2 and "series.csv:4" in out and "sort" in out


def test_unknown_column_lists_the_columns(tmp_path: Path) -> None:
    p = _csv(tmp_path, "t,a,b\n0,1,2\n60,1,2\n")
    code, out = _run("--series", str(p), "--column", "c", "--horizon", "60")
    assert code == 2 and "'c'" in out and "'a', 'b'" in out


@pytest.mark.parametrize("horizon", ["0", "-60"])
def test_horizon_must_be_positive(tmp_path: Path, horizon: str) -> None:
    p = _csv(tmp_path, "t,rps\n0,1\n60,2\n")
    code, out = _run("--series", str(p), "--horizon", horizon)
    assert code == 2 and "--horizon" in out


def test_history_longer_than_the_series_is_explained(tmp_path: Path) -> None:
    p = _csv(tmp_path, "t,rps\n0,1\n60,2\n120,3\n")
    code, out = _run("--series", str(p), "--horizon", "60")
    assert code == 2 and "--history" in out


def test_json_output_scores_every_method(tmp_path: Path) -> None:
    t = np.arange(3 * 144) * 600
    v = 100 + 30 * np.sin(2 * np.pi * t / 86400) + np.random.default_rng(0).normal(0, 3, len(t))
    p = _csv(tmp_path, "t,rps\n" + "".join(f"{a},{b:.3f}\n" for a, b in zip(t, v, strict=True)))
    code, out = _run("--series", str(p), "--horizon", "3600", "--history", str(2 * 86400), "--json")
    assert code == 0, out
    import json

    methods = [r["method"] for r in json.loads(out)["results"]]
    assert methods == ["auto", "holt", "seasonal", "seasonal-naive", "last"]
