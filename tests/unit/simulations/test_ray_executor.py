"""`bench --ray`: the same jobs on a local Ray instance give the same results as local processes.

The bench here is reduced so the suite stays short: the azure-code scenario's quick searches of ours,
static and the oracle on the bundled 20-minute slice of its trace, instead of every scenario and family.
Ray is an optional extra (`pip install -e '.[ray]'`); without it these tests skip.
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from simulations.bench import default_policy_file, jobs_for, run_jobs
from simulations.executors import make_executor
from simulations.scenario import scenario_dir


def test_without_an_address_runs_stay_in_local_processes() -> None:
    with make_executor(2, None) as pool:
        assert isinstance(pool, ProcessPoolExecutor)
        assert pool.submit(sorted, [3, 1, 2]).result() == [1, 2, 3]


def _comparable(rows: Any) -> Any:
    """Records without the fields that measure the machine (wall and CPU seconds), at any depth."""
    if isinstance(rows, dict):
        return {k: _comparable(v) for k, v in rows.items() if k not in ("wall_seconds", "cpu_seconds")}
    if isinstance(rows, list):
        return [_comparable(v) for v in rows]
    return rows


@pytest.mark.slow
def test_the_bench_on_local_ray_matches_local_processes(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    spec = yaml.safe_load((scenario_dir() / "azure-code.yaml").read_text())
    spec["trace"]["path"] = "bundled:azure_code_slice.csv"
    scenario = tmp_path / "azure-code-slice.yaml"
    scenario.write_text(yaml.safe_dump(spec))
    jobs = [j for j in jobs_for([str(scenario)], True, default_policy_file(), ())
            if j.family in ("ours", "static", "oracle")]
    assert {j.family for j in jobs} == {"ours", "static", "oracle"}
    local = _comparable(run_jobs(jobs, 2))
    on_ray = _comparable(run_jobs(jobs, 2, ray_address="local"))
    assert len(on_ray) == len(jobs) and on_ray == local
    runs = {p["gpu_hours"] for r in local for p in r["points"]}
    assert len(runs) > 5  # the replays differ from each other: a real comparison


@pytest.mark.slow
def test_a_failing_ray_task_raises_its_own_one_line_error() -> None:
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads("{")
    with make_executor(1, "local") as pool:
        assert pool.submit(json.loads, "[1, 2]").result() == [1, 2]
        with pytest.raises(json.JSONDecodeError) as got:
            pool.submit(json.loads, "{").result()
    assert str(got.value) == str(want.value)


def test_without_ray_installed_the_bench_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from autoscaler.cli.bench import bench

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    r = CliRunner().invoke(bench, ["--quick", "--scenarios", "azure-code", "--ray", "local", "--doc", ""])
    assert r.exit_code == 2 and "pip install -e '.[ray]'" in r.output
    assert "Traceback" not in r.output

