"""The candidates: every sizing stage in turn, and the held queue's caps on the drain, the hedge and the panic."""

from __future__ import annotations

from dataclasses import replace

from autoscaler.core import CoreState, Measured, decide
from autoscaler.core.candidates import candidates
from autoscaler.core.coldstart import lead_time
from autoscaler.core.decide import forecast_config
from autoscaler.core.stages.readings import read

from .helpers import policy, signals

POL = policy(forecast={"enabled": False})
HELD_STATE = CoreState(recent_waiting=((985.0, 6000.0),))


def _candidates(pol, sig, state=None, now=1000.0, since_last_tick=15.0):
    assert sig.replicas is not None
    state = state or CoreState()
    lead = lead_time(pol.cold_start, state.coldstart, sig.cluster)
    return candidates(pol, sig, sig.replicas, state, read(pol, sig), lead, forecast_config(pol), now,
                      since_last_tick)


def _backlog(waiting: float, served: float):
    return replace(signals(work=served, desired=60, waiting=waiting, queue_p90=30.0),
                   kv_cache_usage=Measured(0.3, 5.0))


def test_each_candidate_is_what_decide_reports_for_it() -> None:
    pol = policy(capacity={"targetUtilization": 0.5}, forecast={"enabled": True})
    sig = signals(work=4.0, desired=4, waiting=40.0, request_rate=40)
    c = _candidates(pol, sig)
    asks = c.asks(floor=1)
    assert list(asks) == ["predictive", "burst", "hedge", "reactive", "concurrency", "floor"]
    assert asks["reactive"] >= 8 and asks["floor"] == 1  # 4 replica-equivalents at 50% target utilization
    got = decide(pol, sig, CoreState(), 1000.0).decision.components
    for name in ("predictive", "burst", "hedge", "reactive", "concurrency"):
        assert got[name] == asks[name], name
    assert set(c.explain()) <= set(got)


def test_a_held_backlog_caps_the_drain_and_the_hedge_and_ends_the_panic() -> None:
    held = _candidates(POL, _backlog(5000.0, 13.0), HELD_STATE)
    assert held.held_queue.active and not held.panic.active
    assert held.reactive.replicas <= held.held_queue.cap and held.hedge.replicas <= held.held_queue.cap
    # The same backlog with every replica busy (a shared queue): the drain and the panic stand.
    shared = _candidates(POL, _backlog(5000.0, 59.0), HELD_STATE)
    assert not shared.held_queue.active and shared.panic.active and shared.reactive.replicas > 60
