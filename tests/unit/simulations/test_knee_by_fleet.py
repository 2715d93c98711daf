"""knee_by_fleet: the learner watching a fleet held at N replicas, for several N."""

from __future__ import annotations

import argparse

import pytest

from autoscaler.policy_loader import load_policy_file
from benchmarks.knee_by_fleet import _replicas, learn_at, main, table
from simulations.bench import default_policy_file
from simulations.runner import duration_of
from simulations.scenario import build_workload, load_scenario


def test_the_fleet_stays_at_each_size_and_the_learner_sees_its_windows() -> None:
    policy = load_policy_file(default_policy_file())[0].spec
    runs = learn_at("azure-conv", [2, 6], policy)
    sc = load_scenario("azure-conv")
    hours = duration_of(build_workload(sc, sc.quick_limit_seconds)) / 3600.0
    assert [r.replicas for r in runs] == [2, 6]
    for r in runs:
        assert r.gpu_hours == pytest.approx(r.replicas * hours, rel=0.02)  # never scaled
        assert r.learned.bins  # the core ran every tick and learned from the held fleet
    assert runs[1].attainment > runs[0].attainment
    lines = table(runs)
    assert lines[0] == "| load per replica (× prior) | 2 replicas | 6 replicas |"
    loads = [float(line.split("|")[1]) for line in lines[2:-2]]
    assert loads == sorted(loads) and len(loads) == len({b[0] for r in runs for b in r.learned.bins})
    assert lines[-2].startswith("| knee | ") and lines[-1].startswith("| attainment, GPU-h | ")


def test_bad_replicas_flag_names_itself() -> None:
    assert _replicas("12, 18") == [12, 18]
    for bad in ("twelve", "0,4", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="--replicas"):
            _replicas(bad)
    with pytest.raises(SystemExit):
        main(["azure-conv", "--replicas", "x"])
