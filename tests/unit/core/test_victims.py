"""Victim choice: the deletion costs make the ReplicaSet's own ranking remove the least busy ready pods."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core.victims import (
    MAX_COST,
    MIN_COST,
    UNKNOWN_COST,
    PodLoad,
    cost_of,
    deletion_costs,
    replicaset_victims,
)

INF = float("inf")


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[PodLoad], int]:
    n = draw(st.integers(1, 12))
    pods = []
    for i in range(n):
        ready = draw(st.booleans())
        inflight = draw(st.one_of(st.none(), st.floats(0, 500, allow_nan=False), st.integers(0, 50).map(float)))
        pods.append(
            PodLoad(
                name=f"p{i}",
                ready=ready,
                inflight=inflight,
                ready_since=draw(st.floats(0, 1e5)) if ready else None,
                created=draw(st.floats(0, 1e5)),
            )
        )
    return pods, draw(st.integers(0, n + 1))


def _load(p: PodLoad) -> float:
    return INF if p.inflight is None else p.inflight


@settings(max_examples=300, deadline=None)
@given(fleets())
def test_the_replicaset_removes_the_least_busy_ready_pods(fleet):
    pods, remove = fleet
    costs = deletion_costs(pods, remove)
    victims = set(replicaset_victims(pods, remove, costs))
    assert len(victims) == min(remove, len(pods))
    gone = [p for p in pods if p.name in victims]
    kept = [p for p in pods if p.name not in victims]
    # not-ready pods go first whatever the costs say (the ReplicaSet ranks readiness before cost)
    if any(p.ready for p in gone):
        assert all(p.ready for p in kept)
    # among ready pods, no survivor is known to be less busy than a victim
    for v in (p for p in gone if p.ready):
        for s in (p for p in kept if p.ready):
            assert cost_of(v.inflight) <= cost_of(s.inflight)
            if s.inflight is not None:
                assert _load(v) <= s.inflight + 1  # within the rounding to whole requests
            # an unknown pod is never removed while a known one stays
            assert not (v.inflight is None and s.inflight is not None)


@settings(max_examples=300, deadline=None)
@given(fleets())
def test_costs_are_int32_monotone_and_unknown_is_never_cheaper(fleet):
    pods, remove = fleet
    costs = deletion_costs(pods, remove)
    if 0 < remove < len(pods):
        assert set(costs) == {p.name for p in pods}
    else:
        assert costs == {}  # nothing to choose: no pod is patched
    for a in pods:
        assert MIN_COST <= costs.get(a.name, 0) <= MAX_COST
        for b in pods:
            if a.name in costs and _load(a) < _load(b):
                assert costs[a.name] <= costs[b.name]
            if a.inflight is None and b.inflight is not None and a.name in costs:
                assert costs[a.name] > costs[b.name]


def test_a_fraction_of_a_request_is_not_idle_and_huge_counts_stay_below_unknown():
    assert cost_of(0.0) == 0 and cost_of(0.2) == 1 and cost_of(3.0) == 3
    assert cost_of(1e12) == UNKNOWN_COST - 1
    assert cost_of(None) == cost_of(float("nan")) == UNKNOWN_COST


def test_default_ranking_removes_not_ready_then_the_most_recently_ready():
    pods = [
        PodLoad("old", True, 0, ready_since=100, created=0),
        PodLoad("new", True, 40, ready_since=900, created=800),
        PodLoad("starting", False, None, created=950),
        PodLoad("mid", True, 3, ready_since=500, created=400),
    ]
    assert replicaset_victims(pods, 2) == ["starting", "new"]
    # with our costs: the starting pod still goes first, then the idle one, not the newest
    assert replicaset_victims(pods, 2, deletion_costs(pods, 2)) == ["starting", "old"]
    assert replicaset_victims(pods, 0) == []


def test_keeping_nodes_warm_breaks_ties_toward_pods_whose_node_stays() -> None:
    """With warm capacity on, among equally busy pods the one sharing its node goes first (the node and its
    cached image stay); a busier pod is still never preferred, and unknown stays the most expensive."""
    pods = [PodLoad("alone", True, 2.0, node_shared=False), PodLoad("shared", True, 2.0, node_shared=True),
            PodLoad("idle-alone", True, 0.0, node_shared=False), PodLoad("unknown", True, None, node_shared=True)]
    plain = deletion_costs(pods, 2)
    assert plain["alone"] == plain["shared"]
    warm = deletion_costs(pods, 2, keep_nodes_warm=True)
    assert warm["idle-alone"] < warm["shared"] < warm["alone"] < warm["unknown"]
    assert replicaset_victims(pods, 2, warm) == ["idle-alone", "shared"]
