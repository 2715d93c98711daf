"""Scale-down in the request-level fleet: the victim is the one Kubernetes' ReplicaSet removes (by deletion
cost for ours, by its default ranking for the baselines); a removed replica keeps serving what it holds for
its termination grace period, and whatever is still there then is aborted, counted and missed."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import pytest

from autoscaler.policy import PolicySpec
from simulations.autoscalers.ours import Ours
from simulations.autoscalers.static import Static
from simulations.fleet import RequestFleet, victim_rule
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace

WARM = COLD_START_PROFILES["warm"]


def _long_requests(n: int, output: int, at: float = 0.0) -> Trace:
    return Trace("long", np.full(n, at), np.full(n, 100), np.full(n, output), 0.0)


def test_deletion_cost_removes_the_least_busy_and_the_default_the_most_recently_ready() -> None:
    trace = Trace("t", np.array([900.0, 900.0, 900.0]), np.array([100, 100, 100]), np.array([2000, 2000, 2000]), 0.0)
    for victims in ("deletion-cost", "replicaset"):
        f = RequestFleet(trace, ServingProfile(), WARM, initial_replicas=2, victims=victims)
        f.set_target(3, 0.0)
        f.advance(899.0)
        assert f.ready_replicas == 3
        ready_order = sorted(f._serving, key=lambda r: r.life.ready_at)
        newest = ready_order[-1]
        # put all three requests on the two oldest replicas: the newest is idle
        f._loads[newest.slot] = 10**6
        f.advance(900.0)
        f._loads[newest.slot] = len(newest.waiting) + newest.running
        assert newest.running + len(newest.waiting) == 0
        busy = [r for r in f._serving if r is not newest]
        assert sum(r.running + len(r.waiting) for r in busy) == 3
        f.advance(901.0)
        f.set_target(2, 901.0)
        gone = [r for r in (*busy, newest) if r not in f._serving]
        assert len(gone) == 1
        assert gone[0] is newest  # idle (the lowest cost) and the most recently ready: both rules agree
    # where they disagree: the newest replica is the busiest
    for victims, expect_newest in (("deletion-cost", False), ("replicaset", True)):
        f = RequestFleet(trace, ServingProfile(), WARM, initial_replicas=2, victims=victims)
        f.set_target(3, 0.0)
        f.advance(899.0)
        assert f.ready_replicas == 3
        newest = max(f._serving, key=lambda r: r.life.ready_at)
        for r in f._serving:  # every arrival goes to the newest replica
            f._loads[r.slot] = 0 if r is newest else 10**6
        f.advance(900.0)
        for r in f._serving:
            f._loads[r.slot] = len(r.waiting) + r.running
        assert newest.running + len(newest.waiting) == 3
        f.set_target(2, 901.0)
        assert (newest not in f._serving) is expect_newest


def test_requests_past_the_grace_period_are_aborted_counted_and_missed() -> None:
    trace = _long_requests(4, output=20000)  # ~minutes of decoding: longer than a 30 s grace
    f = RequestFleet(trace, ServingProfile(), WARM, initial_replicas=2, termination_grace_seconds=30.0)
    f.advance(1.0)
    held = {id(r): r.running + len(r.waiting) for r in f._serving}
    assert sorted(held.values()) == [2, 2]
    f.set_target(1, 1.0)
    assert f.replica_counts(1.0).terminating == 1
    f.advance(30.9)
    assert f.aborted_total == 0 and f.replica_counts(30.9).terminating == 1  # still within the grace
    f.advance(31.1)
    assert f.aborted_total == 2 and f.replica_counts(31.1).terminating == 0
    assert f.in_flight == 2  # the other two are still being served
    f.advance(10_000)
    o = f.outcome(100.0)  # a generous SLO: every first token came in time
    assert o.aborted == 2 and o.aborted_counted
    assert o.attainment == pytest.approx(0.5)  # the two aborted requests are misses
    assert len(f.missed_arrival_times(100.0)) == 2
    assert f.in_flight == 0


def test_the_documented_grace_lets_a_drain_finish_and_aborts_nothing() -> None:
    trace = _long_requests(4, output=2000)
    f = RequestFleet(trace, ServingProfile(), WARM, initial_replicas=2)  # default: the docs' 200 s
    f.advance(1.0)
    f.set_target(1, 1.0)
    f.advance(10_000)
    o = f.outcome(100.0)
    assert o.aborted == 0 and o.attainment == 1.0 and f.success_total == 4


def test_a_draining_replica_keeps_its_queue() -> None:
    """vLLM's WAITING queue belongs to the process: nothing moves it to another replica."""
    serving = ServingProfile(max_num_seqs=1)
    trace = _long_requests(4, output=50)
    f = RequestFleet(trace, serving, WARM, initial_replicas=2, termination_grace_seconds=math.inf)
    f.advance(0.1)
    victim = f._serving[0]
    assert len(victim.waiting) == 1 and victim.running == 1
    f.set_target(1, 0.1)
    assert victim.phase_name == "draining" and len(victim.waiting) == 1
    f.advance(10_000)
    assert f.success_total == 4 and f.aborted_total == 0


def test_only_our_policy_with_deletion_cost_on_gets_the_deletion_cost_rule() -> None:
    on = PolicySpec.model_validate({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"},
                                    "model": {"name": "m"}})
    off = on.model_copy(update={"scale_down": on.scale_down.model_copy(update={"deletion_cost": False})})
    assert victim_rule(Ours(on)) == "deletion-cost"
    assert victim_rule(Ours(off)) == "replicaset"
    assert victim_rule(Static(3)) == "replicaset"


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="termination_grace_seconds"):
        RequestFleet(_long_requests(1, 10), ServingProfile(), WARM, termination_grace_seconds=-1)
    with pytest.raises(ValueError, match="victims"):
        RequestFleet(_long_requests(1, 10), ServingProfile(), WARM, victims="random")


def test_the_grace_sweep_sets_the_grace_of_every_request_level_fleet_and_restores_it() -> None:
    import simulations.runner as runner
    from simulations.grace_sweep import grace
    from simulations.scenario import load_scenario

    sc = load_scenario("azure-code")
    trace = _long_requests(2, output=10)
    with grace(7.0):
        assert cast(RequestFleet, runner.make_fleet(sc, trace, 1)).termination_grace_seconds == 7.0
    assert cast(RequestFleet, runner.make_fleet(sc, trace, 1)).termination_grace_seconds == 200.0
