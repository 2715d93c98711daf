"""The simulator's cordon-and-drain drill: a cordoned node takes no new replica, its replicas count as leaving,
an eviction drains them and the ReplicaSet recreates them elsewhere; the surge keeps the SLO through it."""

from __future__ import annotations

import pytest

from simulations.drain_drill import DrainFleet, _need_of_ours, drill, main
from simulations.profiles import ClusterSpec, ColdStartProfile, ServingProfile
from simulations.scenario import Scenario, TraceSpec, bundled_path
from tests.unit.simulations.conftest import poisson_trace

TYPICAL = ColdStartProfile(scheduling_seconds=2, node_provisioning_seconds=100, weight_load_seconds=20,
                           warmup_seconds=60, free_gpus=0, spread=0.1)


def _fleet(n: int = 4, gpus_per_node: int = 8, sees_leaving: bool = True) -> DrainFleet:
    return DrainFleet(poisson_trace(5, 600, seed=1), ServingProfile(), TYPICAL,
                      ClusterSpec(gpus_per_node=gpus_per_node), initial_replicas=n, seed=1, sees_leaving=sees_leaving)


def test_cordon_marks_the_busiest_nodes_replicas_as_leaving_and_places_nothing_new_there():
    f = _fleet()
    assert f.replica_counts(0.0).leaving == 0
    assert f.cordon(10.0) == 4
    assert f.replica_counts(10.0).leaving == 4
    assert f.lifecycle.free_slots(10.0) == 0  # the node's 4 free GPUs are cordoned
    f.set_target(6, 10.0)  # the surge's replicas boot a new node
    assert f.replica_counts(10.0).leaving == 4 and len(f.lifecycle.nodes) == 2
    assert all(r.life.node is not f.node for r in f._starting)
    assert _fleet(sees_leaving=False).replica_counts(0.0).leaving == 0


def test_evict_drains_the_nodes_replicas_and_the_replicaset_recreates_them_elsewhere():
    f = _fleet()
    f.cordon(10.0)
    events = f.scale_events
    assert f.evict(20.0) == 4
    assert f.target == 4 and f.scale_events == events  # spec.replicas unchanged: no scale event
    counts = f.replica_counts(20.0)
    assert counts.leaving == 0 and counts.ready == 0 and len(counts.starting) == 4
    f.advance(400.0)
    assert f.ready_replicas == 4 and f.ready_staying() == 4


def _scenario() -> Scenario:
    return Scenario(name="steady", trace=TraceSpec(format="flash-crowd", base_rps=20, burst_factor=1,
                                                   duration_seconds=1500),
                    fidelity="request", cold_start="typical", initial_replicas=4,
                    cluster=ClusterSpec(gpus_per_node=8))


def test_the_surge_keeps_the_slo_through_the_drain_and_blindness_does_not():
    from autoscaler.policy_loader import load_policy_file
    from simulations.autoscalers.ours import Ours

    sc = _scenario()
    wl = poisson_trace(20, 1500, seed=3)
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    surge = drill(sc, wl, Ours(policy), 600.0, 300.0, True, name="surge")
    blind = drill(sc, wl, Ours(policy), 600.0, 300.0, False, name="blind")
    gated = drill(sc, wl, Ours(policy), 600.0, None, True, _need_of_ours, name="gated")
    assert surge.node_replicas == blind.node_replicas >= 2
    assert surge.window_attainment >= 0.99 > blind.window_attainment
    assert surge.min_ready_in_window > 0 == blind.min_ready_in_window
    assert gated.evicted_at is not None and gated.evicted_at > 600.0 and gated.window_attainment >= 0.99


def test_the_cli_refuses_a_fluid_scenario_in_one_line(capsys):
    assert main(["--scenario", "diurnal", "--duration", "600", "--cordon-at", "100"]) == 2
    assert "needs a request-level one" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--gpus-per-node", "100000"], "--gpus-per-node: cluster.gpus_per_node"),
    (["--gpus-per-node", "0"], "--gpus-per-node: cluster.gpus_per_node"),
    (["--duration", "inf"], "--duration"),
    (["--scenario", "nosuch"], "no such scenario"),
])
def test_the_cli_names_a_bad_flag_in_one_line(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
