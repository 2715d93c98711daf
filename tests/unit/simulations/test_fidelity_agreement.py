"""Fluid and request-level attainment agree within 2 points for every family `simulations.fidelity` lets run
fluid, on a shared set of traces; the other families are sent request-level.

The traces are what the fluid fleet is used for: 20-min request-level samples of the fluid scenarios'
workloads (diurnal at its peak, ServeGen m-large and m-mid: Poisson arrivals within each 1-s bin, token
lengths drawn from the scenario's distribution), plus the near-Poisson Azure conv slice. Very bursty
request traces (Azure code, 1-s peak/mean 26) are request-level scenarios and stay so: there the pooled
fluid is optimistic by 1 to 5 points for a static fleet. Families that do not agree (see
`simulations.fidelity`) are not tested here for agreement but for being sent request-level.
"""

from __future__ import annotations

import pytest

from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.base import Autoscaler
from simulations.autoscalers.oracle import Oracle
from simulations.autoscalers.ours import Ours
from simulations.autoscalers.registry import make_baseline
from simulations.bench import default_policy_file
from simulations.fidelity import (
    FAMILIES,
    FLUID_AGREES,
    FLUID_AGREES_ON_SIGNAL,
    TRACES,
    WINDOWS,
    agreement_case,
    fleet_mode,
)
from simulations.runner import make_fleet, run
from simulations.scenario import Scenario
from simulations.trace import Trace

TOLERANCE = 0.02


def _case(name: str) -> tuple[Scenario, Trace]:
    return agreement_case(name)


# The baselines at the setting the bench's search picked on each trace's scenario (docs/benchmarks.md, the
# decision-quality table): (main knob value, secondary settings). Families without a fixed plan (ours, the
# oracle) need none.
Setting = tuple[float, tuple[tuple[str, float | str], ...]]
BENCH_SETTINGS: dict[str, dict[str, Setting]] = {
    "static": {"azure-conv": (11.0, ()), "diurnal-peak": (18.0, ()), "servegen-large": (31.0, ()),
               "servegen-mid": (11.0, ())},
    "kpa": {"azure-conv": (100.0, (("scale_down_delay", 900.0),)),
            "diurnal-peak": (50.0, (("scale_down_delay", 600.0),)),
            "servegen-large": (25.0, (("scale_down_delay", 0.0),)),
            "servegen-mid": (100.0, (("scale_down_delay", 900.0),))},
}


# Settings next to the 99 % edge, where the bench's search decides: a static fleet one replica short of the
# diurnal peak fills the KV cache and preempts (docs/vllm-replica-model.md, "Fluid and request-level").
EDGE_SETTINGS: tuple[tuple[str, str, Setting], ...] = (
    ("diurnal-peak", "static", (17.0, ())),
    ("azure-conv", "static", (10.0, ())),
)


def _policy(family: str, setting: Setting | None, sc: Scenario, trace: Trace) -> Autoscaler:
    if family == "ours":
        return Ours(load_policy_file(default_policy_file())[0].spec)
    if family == "oracle":  # the foresight plan at unit headroom, the same plan on both fleets
        return Oracle.for_scenario(sc, trace, 1.0)
    assert setting is not None
    value, secondary = setting
    return make_baseline(family, value, dict(secondary))


def _cases() -> list[tuple[str, str, Setting | None]]:
    out: list[tuple[str, str, Setting | None]] = []
    for trace in TRACES:
        for family in sorted(FLUID_AGREES):
            out.append((trace, family, BENCH_SETTINGS[family][trace] if family in BENCH_SETTINGS else None))
    out.extend(EDGE_SETTINGS)
    return out


def test_every_family_let_run_fluid_is_tested() -> None:
    for family in FLUID_AGREES - {"ours", "oracle"}:
        assert set(BENCH_SETTINGS.get(family, {})) == set(TRACES), family
    for family, signals in FLUID_AGREES_ON_SIGNAL.items():
        for signal in signals:
            assert {t for t, f, (_, sec) in SIGNAL_CASES if f == family and dict(sec)["signal"] == signal} == set(
                WINDOWS), (family, signal)


def test_the_bench_does_not_run_a_signal_the_fluid_fleet_is_not_validated_for_on_a_fluid_scenario() -> None:
    from simulations.bench import jobs_for

    jobs = jobs_for(["servegen-mid", "azure-conv"], True, default_policy_file(), ())
    fluid = {(j.family, dict(j.secondary).get("signal")) for j in jobs if j.scenario == "servegen-mid"}
    request = {(j.family, dict(j.secondary).get("signal")) for j in jobs if j.scenario == "azure-conv"}
    assert ("hpa", "queue_p90") in fluid and ("keda", "queue_p90") in fluid
    assert not {("hpa", "waiting"), ("hpa", "running"), ("keda", "waiting")} & fluid
    assert {("hpa", "waiting"), ("hpa", "running"), ("keda", "waiting")} <= request  # request-level: all run


@pytest.mark.slow
@pytest.mark.parametrize(("trace", "family", "setting"), _cases())
def test_fluid_agrees_with_request_level(trace: str, family: str, setting: Setting | None) -> None:
    sc, tr = _case(trace)
    req = run(sc, tr, _policy(family, setting, sc, tr)).outcome
    flu = run(sc, tr.binned(sc.bin_seconds), _policy(family, setting, sc, tr)).outcome
    assert abs(req.attainment - flu.attainment) <= TOLERANCE, (trace, family, setting, req.attainment,
                                                                flu.attainment)
    if family in BENCH_SETTINGS and family != "static":  # a dynamic fleet: the bench compares cost, within 10 %
        assert abs(flu.gpu_hours / req.gpu_hours - 1.0) <= 0.10, (trace, family, req.gpu_hours, flu.gpu_hours)


# HPA and KEDA on the queue-time p90 signal, across the range the bench's search visits, on the request
# samples of the workloads the fluid scenarios replay (Azure conv is a request-level scenario: the bench
# never runs it fluid, and its clones, 10 copies within 100 ms, make a queue-time tail no binned workload
# carries). Near the target (either fleet at ≥ 94%) attainment agrees within 2 points and GPU-hours within
# 10 %; deep misses (the diurnal peak window at every threshold, 81–89% elsewhere) only need the same
# verdict: both fleets below 99%, which is all the bisection reads there. On `waiting` and `running` they
# do not agree (servegen-large, HPA on waiting 0.59: 93.6% request-level, 100% fluid), so those signals are
# not run on fluid scenarios (`simulations.bench.runnable`).
SIGNAL_CASES: tuple[tuple[str, str, Setting], ...] = tuple(
    (trace, family, (value, (("signal", signal),)))
    for family, signals in sorted(FLUID_AGREES_ON_SIGNAL.items()) for signal in sorted(signals)
    for trace in WINDOWS for value in (0.21, 0.2973, 0.42, 0.6))
NEAR_TARGET = 0.94


@pytest.mark.slow
@pytest.mark.parametrize(("trace", "family", "setting"), SIGNAL_CASES)
def test_fluid_agrees_with_request_level_on_the_validated_signals(trace: str, family: str,
                                                                  setting: Setting) -> None:
    sc, tr = _case(trace)
    req = run(sc, tr, _policy(family, setting, sc, tr)).outcome
    flu = run(sc, tr.binned(sc.bin_seconds), _policy(family, setting, sc, tr)).outcome
    case = (trace, family, setting, req.attainment, flu.attainment, req.gpu_hours, flu.gpu_hours)
    assert (req.attainment >= 0.99) == (flu.attainment >= 0.99), case
    if max(req.attainment, flu.attainment) >= NEAR_TARGET:
        assert abs(req.attainment - flu.attainment) <= TOLERANCE, case
        assert abs(flu.gpu_hours / req.gpu_hours - 1.0) <= 0.10, case


def test_families_without_agreement_run_request_level() -> None:
    for family in FAMILIES:
        assert fleet_mode("request", family) == "request"
        assert fleet_mode("fluid", family) == ("fluid" if family in FLUID_AGREES else "request")
    assert {"hpa", "keda"}.isdisjoint(FLUID_AGREES)
    for family in ("hpa", "keda"):  # validated on one signal only
        assert fleet_mode("fluid", family, "queue_p90") == "fluid"
        assert fleet_mode("fluid", family, "waiting") == "request"
        assert fleet_mode("request", family, "queue_p90") == "request"
    assert fleet_mode("fluid", "hpa", "running") == "request"
    with pytest.raises(ValueError, match="family"):
        fleet_mode("fluid", "vpa")
    with pytest.raises(ValueError, match="fidelity"):
        fleet_mode("hybrid", "static")


@pytest.mark.slow
@pytest.mark.parametrize("replicas", [16, 17])
def test_fluid_preempts_at_a_full_kv_cache_as_the_engine_does(replicas: int) -> None:
    """A static fleet short of the diurnal peak fills its KV cache and preempts (recompute). The fluid's
    preemption count (its recompute work) follows the engine's within 30 %; without it the fluid was 24
    points optimistic at 16 replicas."""
    sc, tr = _case("diurnal-peak")
    req = make_fleet(sc, tr, replicas).scrape(tr.duration_seconds)
    flu = make_fleet(sc, tr.binned(sc.bin_seconds), replicas).scrape(tr.duration_seconds)
    assert req.preemptions > 500
    assert abs(flu.preemptions / req.preemptions - 1.0) <= 0.30, (req.preemptions, flu.preemptions)
    assert make_fleet(sc, tr.binned(sc.bin_seconds), 19).scrape(tr.duration_seconds).preemptions == 0
