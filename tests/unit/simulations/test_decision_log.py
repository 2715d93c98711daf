"""`simulate` writes ours' decision at every tick: the record is the decisions the replay applied."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from autoscaler.core.decide import Decision
from autoscaler.core.reason import Reason
from autoscaler.policy_loader import load_policy_file
from simulations.decision_log import DecisionLog
from simulations.scenario import Scenario, TraceSpec, build_workload, bundled_path
from simulations.session import simulate


def _decision(**components: float) -> Decision:
    return Decision(7, 5, Reason.SCALE_UP_PREDICTIVE, "predictive", dict(components), 180.0, 3.2, False, True, 0,
                    "scale up 5 → 7: predictive")


def test_each_line_is_one_decision_with_its_components(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "d.jsonl"
    with DecisionLog(path) as log:
        log.write(15.0, _decision(predictive=7, capacity_factor=0.8))
        log.write(30.0, _decision(predictive=6, engine_knee=float("nan"), lead=float("inf")))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert log.lines == 2
    assert rows[0] == {"t": 15.0, "current": 5, "desired": 7, "reason": "ScaleUpPredictive", "binding": "predictive",
                       "panic": False, "message": "scale up 5 → 7: predictive", "predictive": 7,
                       "capacity_factor": 0.8}
    assert rows[1]["predictive"] == 6 and "engine_knee" not in rows[1] and "lead" not in rows[1]


def test_writing_outside_the_with_block_names_the_file(tmp_path: Path) -> None:
    log = DecisionLog(tmp_path / "d.jsonl")
    with pytest.raises(RuntimeError, match=r"d\.jsonl"):
        log.write(0.0, _decision())


def test_the_log_is_what_the_replay_applied(tmp_path: Path) -> None:
    sc = Scenario(name="t", trace=TraceSpec(format="flash-crowd", duration_seconds=1800.0), initial_replicas=2,
                  cold_start="typical")
    workload = build_workload(sc)
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    path = tmp_path / "t-decisions.jsonl"
    [res] = simulate(sc, workload, policy, [], decisions_path=path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    ticks = [r["t"] for r in rows]
    assert ticks == [15.0 * (i + 1) for i in range(len(rows))]  # one line per 15-s tick, in order
    assert ticks[-1] >= 1800.0
    target = dict(zip(res.series_t.tolist(), res.series_desired.tolist(), strict=True))
    checked = 0
    for r in rows:
        assert r["reason"] in {x.value for x in Reason} and r["binding"] and r["message"]
        assert all(math.isfinite(v) for k, v in r.items() if isinstance(v, float))
        if r["t"] in target and r["desired"] is not None:
            assert target[r["t"]] == r["desired"], r  # the fleet's target after the tick is the decision
            checked += 1
    assert checked >= 100
    assert max(r["desired"] for r in rows) > min(r["desired"] for r in rows)  # the crowd moved the fleet
