"""The search finds each family's cheapest setting reaching the target, exactly for integer knobs, with
few replays, and says so when attainment is not monotone or a bound stops it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from simulations.search import FAMILIES, Knob, Point, knobs_for, main_knob, search

STATIC = Knob("replicas", 1, 60, 8, "lower", integer=True, log=False)
TARGET = Knob("target", 0.25, 1024, 32, "higher", tol=0.05)


def counted(f: Callable[[float], float], cost: Callable[[float], float]) -> tuple[Callable[[float], Point], list]:
    calls: list[float] = []

    def ev(v: float) -> Point:
        calls.append(v)
        return Point(v, f(v), cost(v))

    return ev, calls


@pytest.mark.parametrize("need", [1, 2, 7, 8, 9, 19, 33, 60])
def test_static_search_is_exact_one_replica_fewer_was_run_and_misses(need: int) -> None:
    ev, calls = counted(lambda n: 0.995 if n >= need else 0.9 + n / 1000, lambda n: 10.0 * n)
    res = search(ev, STATIC, 0.99)
    assert res.best.value == need and res.reached and res.monotone
    if need > 1:
        assert need - 1 in calls and res.exact  # one replica fewer was replayed and missed
    else:
        assert res.stopped_by == "cheap bound reaches the target"
    assert len(calls) <= 10  # far fewer than the 60 a full grid needs


def test_static_search_reports_the_best_attainment_when_even_the_bound_misses() -> None:
    ev, _ = counted(lambda n: 0.5 + n / 200, lambda n: float(n))
    res = search(ev, STATIC, 0.99)
    assert not res.reached and res.best.value == 60 and res.stopped_by == "costly bound misses the target"


def test_a_per_pod_target_is_bisected_to_the_tolerance_on_a_log_scale() -> None:
    boundary = 12.3  # reaches for targets up to 12.3 running per pod
    ev, calls = counted(lambda t: 0.995 if t <= boundary else 0.95, lambda t: 100.0 / t)
    res = search(ev, TARGET, 0.99)
    assert res.reach is not None and res.miss is not None
    assert res.reach <= boundary < res.miss and res.miss / res.reach <= 1.05
    assert res.best.value == res.reach and res.exact
    assert len(calls) <= 12


def test_non_monotone_attainment_is_probed_flagged_and_the_cheapest_visited_point_reaching_wins() -> None:
    # reaches at >= 16 and again at 6..7 (a dip in between); GPU-hours not monotone in n either
    def att(n: float) -> float:
        return 0.995 if n >= 16 or 6 <= n <= 7 else 0.98

    def cost(n: float) -> float:
        return 3.0 if n == 7 else 10.0 * n

    ev, calls = counted(att, cost)
    res = search(ev, STATIC, 0.99, start=16)
    assert not res.monotone and res.violations
    assert 7 in calls and res.best.value == 7 and res.best.gpu_hours == 3.0
    assert res.reach == 6 and res.miss == 5  # followed down to the lower boundary
    plain = search(counted(att, cost)[0], STATIC, 0.99, start=16, probe_beyond=False)
    assert plain.best.value == 16 and plain.monotone  # without the probe the dip is not seen


def test_quick_mode_widens_continuous_brackets_but_keeps_static_exact() -> None:
    k, combos = knobs_for("hpa", quick=True)
    assert k is not None and k.tol > main_knob("hpa").tol
    assert knobs_for("static", quick=True)[0] == main_knob("static") and main_knob("static").integer
    full = knobs_for("hpa", quick=False)[1]
    assert {dict(c)["down_window"] for c in full} == {300, 600, 900}
    assert {dict(c)["signal"] for c in full} == {"running", "waiting", "queue_p90"}
    assert {dict(c)["signal"] for c in combos} == {"running", "waiting", "queue_p90"}  # quick: the signal only
    assert all(set(dict(c)) == {"signal"} for c in combos)


def test_the_main_knob_follows_the_registry_and_its_signal() -> None:
    from simulations.autoscalers import registry

    for name in FAMILIES:
        k, r = main_knob(name), registry.FAMILIES[name].main
        assert (k.lo, k.hi, k.start, k.integer) == (r.lo, r.hi, r.default, r.integer)
        assert k.cheaper == ("higher" if r.direction == "cheaper_up" else "lower")
    q = main_knob("hpa", (("signal", "queue_p90"),))
    assert q.hi <= 60 and q.lo < 1  # seconds of queue time, not requests per pod


def test_every_family_states_bounds_direction_and_start_inside_them() -> None:
    for name in FAMILIES:
        k = main_knob(name)
        assert k.lo < k.hi and k.lo <= k.start <= k.hi and k.cheaper in ("lower", "higher")
