"""`simulate` writes ours' decision at every tick: the record is the decisions the replay applied."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from autoscaler.core import CoreState
from autoscaler.core.candidates import candidates
from autoscaler.core.coldstart import lead_time
from autoscaler.core.decide import Decision, forecast_config
from autoscaler.core.reason import Reason
from autoscaler.core.stages.readings import read
from autoscaler.policy_loader import load_policy_file
from simulations.decision_log import HOLDERS, LEVELS, DecisionLog, breakdown
from simulations.scenario import Scenario, TraceSpec, build_workload, bundled_path
from simulations.session import simulate
from tests.unit.core.helpers import policy, signals


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


def _log(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_breakdown_splits_each_count_by_what_asked_for_it(tmp_path: Path) -> None:
    rows: list[dict] = [
        # forecast above reactive: 4 for demand (2.0 ÷ 0.5), 2 margin, 2 forecast
        {"t": 15, "desired": 8, "reactive": 6, "predictive": 8, "floor": 2, "offered_work": 2.0,
         "capacity_factor": 0.5},
        # burst headroom above the forecast, and 4 held above what anything asked for (the scale-down window)
        {"t": 30, "desired": 9, "reactive": 3, "predictive": 4, "hedge": 5, "floor": 2, "offered_work": 1.0,
         "capacity_factor": 0.5, "reason": "HoldStabilizing"},
        {"t": 45, "desired": None, "reactive": 40},  # nothing written this tick: not counted
        # a floor of 6 that the rate limit held to 3
        {"t": 60, "desired": 3, "reactive": 2, "predictive": 0, "floor": 6, "max": 60, "offered_work": 0.5,
         "capacity_factor": 0.5},
    ]
    b = breakdown(_log(tmp_path / "d.jsonl", rows))
    assert b.ticks == 3
    assert b.parts == pytest.approx({"demand": 7 / 3, "margin": 4 / 3, "forecast": 1.0, "burst": 1 / 3, "floor": 4 / 3,
                                     "held": 4 / 3})
    assert b.short == pytest.approx(1.0) and b.desired == pytest.approx(20 / 3)
    assert b.held_by == pytest.approx({"window": 4 / 3, "rate": 0.0, "untested": 0.0, "panic": 0.0, "unknown": 0.0,
                                       "other": 0.0})
    text = b.describe()
    assert "2.3 for the demand seen" in text and "+1.3 held above every candidate" in text
    assert "Held by: the scale-down window 1.3." in text and "held back 1.0" in text


@pytest.mark.parametrize(("row", "holder"), [
    ({"reason": "HoldStabilizing", "untested_floor": 9}, "untested"),  # the floor names itself, whatever the reason
    ({"reason": "HoldStabilizing", "untested_floor": 7}, "window"),  # a floor under the count did not hold it
    ({"reason": "ScaleDown"}, "rate"),
    ({"reason": "HoldPanic"}, "panic"),
    ({"reason": "MetricsMissing"}, "unknown"),
    ({"reason": "ScaleUpLeaving"}, "other"),
    ({}, "other"),
])
def test_held_replicas_are_charged_to_what_held_them(tmp_path: Path, row: dict, holder: str) -> None:
    rows = [{"t": 15, "desired": 9, "reactive": 3, "offered_work": 1.0, "capacity_factor": 0.5, **row}]
    b = breakdown(_log(tmp_path / "d.jsonl", rows))
    assert b.parts["held"] == pytest.approx(6.0)
    assert b.held_by == pytest.approx({h: 6.0 if h == holder else 0.0 for h in HOLDERS})


def test_replicas_the_burst_hold_keeps_count_as_burst_not_as_held(tmp_path: Path) -> None:
    rows = [{"t": 15, "desired": 9, "reactive": 3, "predictive": 4, "burst": 0, "burst_held": 9, "floor": 1,
             "offered_work": 1.0, "capacity_factor": 0.5}]
    b = breakdown(_log(tmp_path / "d.jsonl", rows))
    assert b.parts["burst"] == pytest.approx(5.0) and b.parts["held"] == 0.0


def test_the_breakdown_of_a_replay_adds_up_to_what_it_asked_for(tmp_path: Path) -> None:
    sc = Scenario(name="t", trace=TraceSpec(format="flash-crowd", duration_seconds=1800.0), initial_replicas=2,
                  cold_start="typical")
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    path = tmp_path / "t-decisions.jsonl"
    simulate(sc, build_workload(sc), policy, [], decisions_path=path)
    b = breakdown(path)
    assert b.ticks >= 120
    assert sum(b.parts.values()) - b.short == pytest.approx(b.desired)
    assert all(v >= 0 for v in b.parts.values()) and b.parts["demand"] > 0
    assert json.loads(json.dumps(b.to_dict()))["ticks"] == b.ticks


def test_an_empty_log_has_no_breakdown(tmp_path: Path) -> None:
    b = breakdown(_log(tmp_path / "d.jsonl", []))
    assert b.ticks == 0 and b.desired == 0 and not any(b.parts.values())


def test_every_candidate_the_core_asks_for_is_in_one_level_of_the_breakdown() -> None:
    pol = policy(forecast={"enabled": True})
    sig = signals(work=4.0, desired=4, waiting=40.0, request_rate=40)
    lead = lead_time(pol.cold_start, CoreState().coldstart, sig.cluster)
    assert sig.replicas is not None
    c = candidates(pol, sig, sig.replicas, CoreState(), read(pol, sig), lead, forecast_config(pol), 1000.0, 15.0)
    named = [name for _, names in LEVELS for name in names]
    assert len(named) == len(set(named))  # each in one level only
    assert set(c.asks(floor=1)) <= set(named)  # a candidate added to the core is split somewhere
