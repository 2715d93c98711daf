"""The causal reference follows the oracle's plan without foresight: it never orders a replica before the
requirement has risen, and the oracle's foresight serves at least as
many requests on the same plan."""

from __future__ import annotations

from benchmarks.causal_reference import CausalReference
from simulations.autoscalers.oracle import Oracle, plan_need
from simulations.runner import run
from tests.unit.simulations.test_oracle import _ramp_trace, _scenario


def test_it_orders_only_after_the_requirement_rose_and_serves_no_more_than_the_oracle() -> None:
    sc, wl = _scenario(), _ramp_trace()
    need = plan_need(sc, wl, 1.0)
    causal = CausalReference(need, 1, sc.initial_replicas)
    ordered: list[tuple[float, int, int]] = []
    orig = causal.tick

    def tick(now, ctx):
        want = orig(now, ctx)
        if want is not None and want > ctx.fleet.target:
            ordered.append((now, want, causal.need_between(0.0, now)))
        return want

    causal.tick = tick  # type: ignore[method-assign]
    res = run(sc, wl, causal)
    assert ordered, "the ramp needs more replicas than the start"
    assert all(want <= seen for _, want, seen in ordered)  # nothing beyond what the past required
    oracle = run(sc, wl, Oracle.for_scenario(sc, wl, 1.0))
    assert oracle.outcome.attainment >= res.outcome.attainment  # foresight starts replicas in time
