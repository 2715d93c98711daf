"""Warm slots in the simulated cluster (simulations/lifecycle.py): placeholders that hold a replica's GPUs on a
ready node with the image, taken by a new replica through priority preemption, replaced, and billed."""

from __future__ import annotations

import numpy as np
import pytest

from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.ours import Ours, with_warm_pool
from simulations.autoscalers.static import Static
from simulations.fleet import RequestFleet
from simulations.lifecycle import Lifecycle
from simulations.profiles import ClusterSpec, ColdStartProfile, ServingProfile
from simulations.runner import run
from simulations.scenario import Scenario, TraceSpec, bundled_path
from simulations.trace import Trace

from .conftest import poisson_trace

# medians exactly (spread 0): scheduling 2, node 100, weight load 20, warmup 60; the image on the node image
TYPICAL = ColdStartProfile(name="fixed", scheduling_seconds=2, node_provisioning_seconds=100, image_pull_seconds=0,
                           image_preloaded=True, weight_load_seconds=20, warmup_seconds=60, spread=0.0, free_gpus=0)
COLD = TYPICAL.model_copy(update={"image_pull_seconds": 300.0, "image_preloaded": False})


def _life(warm: int, profile: ColdStartProfile = TYPICAL, **cluster: object) -> Lifecycle:
    return Lifecycle(profile, ClusterSpec(gpus_per_node=1, warm_slots=warm, **cluster), 1, seed=3)


def _stages(life_stages: list[tuple[str, float, float, str]]) -> list[tuple[str, float, str]]:
    return [(s, round(b - a, 6), sit) for s, a, b, sit in life_stages]


def test_a_replica_takes_a_warm_slot_and_pays_scheduling_weights_and_warmup_only() -> None:
    lc = _life(1)
    assert lc.cluster_facts(0.0).warm_slots == 1
    r = lc.request(10.0)
    assert r.ready_at == pytest.approx(10 + 2 + 20 + 60)
    assert _stages(r.stages) == [("scheduling", 2.0, "warm"), ("image_pull", 0.0, "warm"),
                                 ("weight_load", 20.0, "warm"), ("warmup", 60.0, "warm")]
    obs = lc.take_observations(200.0)
    assert {o.situation for o in obs} == {"warm"} and len(obs) == 4
    assert lc.starts == {"warm": 1, "cached": 0, "cold": 0}


def test_the_taken_slot_is_replaced_on_a_new_node_and_warm_once_it_boots() -> None:
    lc = _life(1)
    lc.request(10.0)
    assert len(lc.placeholders) == 1
    assert lc.cluster_facts(50.0).warm_slots == 0  # the replacement's node is booting
    assert lc.cluster_facts(110.0).warm_slots == 1
    # a replica requested while the replacement boots takes its claim: it waits for that node, not a new one
    r = lc.request(20.0)
    assert r.stages[0][0] == "node_provisioning" and r.stages[0][2] == pytest.approx(110.0)
    assert r.ready_at == pytest.approx(110 + 20 + 60)
    assert lc.starts["cold"] == 1 and len(lc.placeholders) == 1


def test_a_free_gpu_on_a_ready_node_goes_first_no_preemption() -> None:
    lc = _life(1)
    a = lc.add_ready(0.0)
    lc.gone(a, 5.0)  # its node is idle, ready, with the image
    r = lc.request(6.0)
    assert r.stages[0][3] == "default" and r.start == "cached"
    assert lc.cluster_facts(6.0).warm_slots == 1  # the placeholder was not touched


def test_prestaged_weights_shorten_the_load_and_the_placeholder_stages_them() -> None:
    lc = _life(1, warm_weight_load_seconds=5.0)
    r = lc.request(0.0)
    assert _stages(r.stages)[2] == ("weight_load", 5.0, "warm")
    # the replacement boots (100 s) and downloads the weights (the weight-load median, 20 s) before it is warm
    assert lc.cluster_facts(119.0).warm_slots == 0
    assert lc.cluster_facts(120.0).warm_slots == 1


def test_a_warming_placeholder_leaves_the_rest_of_its_image_pull_to_the_replica() -> None:
    lc = _life(0, COLD)
    lc.set_warm_slots(1, 0.0)  # boots a node (100 s), then pulls the image (300 s): warm at 400
    r = lc.request(250.0)  # the node is ready, the pull has 150 s to go
    assert _stages(r.stages)[:2] == [("scheduling", 2.0, "default"), ("image_pull", 148.0, "uncached")]
    assert r.ready_at == pytest.approx(400 + 20 + 60) and r.start == "cold"


def test_gpu_seconds_count_placeholders_and_report_them_apart() -> None:
    lc = _life(2)
    assert lc.gpu_seconds(100.0) == pytest.approx(200.0)
    assert lc.warm_gpu_seconds(100.0) == pytest.approx(200.0)
    lc.request(100.0)  # takes one; its replacement holds a GPU from its placement (a new, booting node)
    # slots: the taken one 0–100, the other 0–200, the replacement 100–200; the replica 100–200
    assert lc.warm_gpu_seconds(200.0) == pytest.approx(100 + 200 + 100)
    assert lc.gpu_seconds(200.0) == pytest.approx(400 + 100)
    lc.set_warm_slots(0, 200.0)
    assert lc.warm_gpu_seconds(300.0) == pytest.approx(400.0)
    assert lc.cluster_facts(300.0).warm_slots == 0


def test_shrinking_the_pool_drops_pending_then_the_least_warm() -> None:
    lc = _life(1, max_gpus=3)
    lc.add_ready(0.0)
    lc.set_warm_slots(3, 10.0)  # one more fits the quota (booting), the third waits
    assert sum(p.node is None for p in lc.placeholders) == 1
    lc.set_warm_slots(2, 20.0)
    assert all(p.node is not None for p in lc.placeholders)
    lc.set_warm_slots(1, 30.0)
    (kept,) = lc.placeholders
    assert kept.warm_at == 0.0  # the one that was warm from the start


def test_pending_placeholders_wait_for_quota_after_replicas() -> None:
    lc = _life(0, max_gpus=2)
    a = lc.add_ready(0.0)
    lc.add_ready(0.0)
    lc.set_warm_slots(1, 0.0)
    waiting = lc.request(1.0)  # no free GPU, no placeholder on a node: it waits for quota
    assert not waiting.stages and lc.placeholders[0].node is None
    lc.gone(a, 50.0)  # the replica gets the freed GPU, the placeholder keeps waiting
    assert waiting.stages and lc.placeholders[0].node is None
    lc.gone(waiting, 60.0)
    assert lc.placeholders[0].node is not None and lc.cluster_facts(70.0).warm_slots == 1


def test_no_warm_capacity_reports_none_and_counts_starts() -> None:
    lc = _life(0)
    assert lc.cluster_facts(0.0).warm_slots is None
    r = lc.request(0.0)
    assert r.start == "cold" and lc.warm_gpu_seconds(500.0) == 0.0
    lc.gone(r, 300.0)
    assert lc.request(310.0).start == "cached"  # the idle node still has the image
    assert lc.starts == {"warm": 0, "cached": 1, "cold": 1}


def test_scale_down_frees_a_gpu_on_a_node_that_stays_with_warm_capacity_on(serving: ServingProfile) -> None:
    trace = Trace("none", np.array([9000.0]), np.array([10]), np.array([2]), 0.0)
    # two GPUs per node: the placeholder and the first replica share node A, the second replica is alone on B
    cluster = ClusterSpec(gpus_per_node=2, warm_slots=1)
    f = RequestFleet(trace, serving, TYPICAL, cluster, initial_replicas=2)
    shared, alone = (rep.life for rep in f._serving)
    assert f.lifecycle.removal_key(shared) < f.lifecycle.removal_key(alone)
    f.set_target(1, 1.0)
    assert [rep.life for rep in f._serving] == [alone]  # A keeps the image for the next start; B stays busy
    # without warm capacity every replica ranks the same: the first of equals goes, as before
    g = RequestFleet(trace, serving, TYPICAL, ClusterSpec(gpus_per_node=2), initial_replicas=3)
    first = g._serving[0].life
    g.set_target(2, 1.0)
    assert first not in [rep.life for rep in g._serving]


def _scenario(warm: int) -> Scenario:
    return Scenario(name="t", trace=TraceSpec(format="flash-crowd"), cold_start=TYPICAL,
                    cluster=ClusterSpec(gpus_per_node=1, warm_slots=warm), initial_replicas=2, seed=2)


def test_a_fixed_pool_runs_under_any_family_and_is_billed_in_the_outcome() -> None:
    trace = poisson_trace(2, 600)
    cold = run(_scenario(0), trace, Static(2)).outcome
    warm = run(_scenario(2), trace, Static(2)).outcome
    assert cold.warm_gpu_hours == 0 and warm.warm_gpu_hours == pytest.approx(2 * trace.duration_seconds / 3600)
    assert warm.gpu_hours == pytest.approx(cold.gpu_hours + warm.warm_gpu_hours)
    assert warm.attainment == cold.attainment  # no start happens: the pool only costs


def test_ours_keeps_the_pool_at_least_min_slots_and_reports_it_to_the_decision(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import simulations.autoscalers.ours as ours_module

    seen: list[int | None] = []
    real = ours_module.decide

    def spy(policy, signals, state, now, fcfg):
        seen.append(signals.cluster.warm_slots)
        return real(policy, signals, state, now, fcfg)

    monkeypatch.setattr(ours_module, "decide", spy)
    spec = load_policy_file(str(bundled_path("default-policy.yaml")))[0].spec
    trace = poisson_trace(2, 600)
    ours = Ours(with_warm_pool(spec, 2))  # minSlots = maxSlots = 2: the pool is 2 whatever the decision sizes
    res = run(_scenario(0), trace, ours)  # the scenario starts with no pool: ours orders it at its first tick
    first = ours.interval_seconds
    assert res.outcome.warm_gpu_hours == pytest.approx(2 * (trace.duration_seconds - first) / 3600)
    # the new placeholders boot nodes (100 s) first: the decision sees 0 warm, then 2
    assert seen[0] is None and seen[1] == 0 and seen[-1] == 2
    off = Ours(with_warm_pool(spec, 0))
    assert run(_scenario(0), trace, off).outcome.warm_gpu_hours == 0


def test_the_verdict_counts_cache_hit_starts_and_the_warm_cost() -> None:
    from dataclasses import replace

    from simulations.verdict import verdict

    res = run(_scenario(1), poisson_trace(2, 300), Static(2))
    o = replace(res.outcome, warm_starts=3, cache_hit_starts=5, cold_starts=2)
    text = verdict(_scenario(1), [replace(res, policy="ours", outcome=o)])
    assert "Of its 7 replica starts, 5 hit a cache (3 on a warm slot; the slots cost 0.08 GPU-h) and 2 waited" \
        in text
    quiet = verdict(_scenario(0), [replace(res, policy="ours", outcome=replace(o, cache_hit_starts=0,
                                                                               cold_starts=0))])
    assert "replica starts" not in quiet


def test_the_fluid_fleet_shares_the_warm_slots(serving: ServingProfile) -> None:
    from simulations.fluid import FluidFleet

    f = FluidFleet(poisson_trace(2, 600).binned(1.0), serving, TYPICAL, ClusterSpec(gpus_per_node=1, warm_slots=1),
                   initial_replicas=1, seed=1)
    f.set_target(2, 30.0)
    assert f.lifecycle.starts["warm"] == 1
    assert f.replica_counts(33.0).starting[0].stage == "weight_load"  # no node boot: 2 s of scheduling only
    assert f.cluster_facts(31.0).warm_slots == 0
