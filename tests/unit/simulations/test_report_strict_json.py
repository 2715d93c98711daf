"""Every JSON the project writes is strict: no Infinity or NaN; a null says why it is null."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from autoscaler.cli import main
from simulations.report import NULL_REASONS, dumps_strict, strict_json, write_json


def strict_loads(text: str) -> Any:
    def bad(name: str) -> None:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=bad)


def test_non_finite_numbers_become_null_with_a_reason() -> None:
    payload = {"ttft_p99_seconds": math.inf, "queue": float("nan"), "ok": np.float64(1.5),
               "nested": [{"x": -math.inf}], "arr": np.array([1.0, 2.0]), "n": np.int64(3)}
    out = strict_loads(dumps_strict(payload))
    assert out["ttft_p99_seconds"] is None and out["ttft_p99_seconds_null_reason"] == NULL_REASONS["inf"]
    assert out["queue"] is None and out["queue_null_reason"] == NULL_REASONS["nan"]
    assert out["ok"] == 1.5 and out["n"] == 3 and out["arr"] == [1.0, 2.0]
    assert out["nested"][0]["x"] is None and "x_null_reason" in out["nested"][0]
    assert strict_json([math.inf, 1.0]) == [None, 1.0]


def test_write_json_refuses_nothing_and_writes_strict(tmp_path: Path) -> None:
    p = tmp_path / "a.json"
    write_json(p, {"a": math.inf})
    assert "Infinity" not in p.read_text() and strict_loads(p.read_text())["a"] is None
    with pytest.raises(TypeError):
        write_json(p, {"a": object()})


def test_simulate_json_output_parses_with_a_strict_parser(tmp_path: Path) -> None:
    # static:1 starves the demo's bursts: some TTFT quantiles are infinite (never served in the replay)
    res = CliRunner().invoke(main, ["simulate", "--out", str(tmp_path), "--baselines", "static:1", "--json"])
    assert res.exit_code == 0, res.output
    data = strict_loads(res.stdout)
    assert [r["policy"] for r in data["results"]] == ["ours", "static"]
    assert "_null_reason" in res.stdout  # the starved static fleet has infinite TTFT quantiles
    assert "Infinity" not in res.stdout and "NaN" not in res.stdout
