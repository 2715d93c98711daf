"""The held-queue stage: a backlog the engines hold is not drained by more replicas (decision change P)."""

from __future__ import annotations

from dataclasses import replace

from autoscaler.core import CoreState, Measured, ReplicaCounts, decide
from autoscaler.core.capacity import CapacityStats
from autoscaler.core.signals import Signals, StartingReplica
from autoscaler.core.stages.capacity import Learned, Load, capacity
from autoscaler.core.stages.demand import Demand
from autoscaler.core.stages.held_queue import HELD_SHARE, held_queue
from autoscaler.core.stages.sizing import replicas_for

from .helpers import policy, signals

POL = policy(capacity={"learn": True})  # 1-s queue budget (the helper's 2-s TTFT SLO)
SERVED = 13.0


def _dm(waiting: float = 5000.0, served: float = SERVED, offered: float | None = None, growth: float = -60.0,
        wpr: float = 0.1) -> Demand:
    return Demand(served, served if offered is None else offered, waiting * wpr, waiting, True, growth, wpr)


def _held(dm: Demand, ready: int = 60, starting: int = 0, kv: float | None = 0.3, q90: float | None = 30.0,
          previous: bool = False, trusted: bool = True, throughput: float = 1.0, stats: CapacityStats | None = None):
    reps = ReplicaCounts(desired=ready + starting, ready=ready,
                         starting=tuple(StartingReplica("scheduling", 10.0) for _ in range(starting)))
    # a replica measured to drain `throughput` (64 samples: shrunk a little towards the prior's 1)
    stats = CapacityStats((throughput,) * 64) if stats is None else stats
    return held_queue(POL, dm, reps, kv, stats, 0.5, q90, previous, trusted)


def test_a_shrinking_backlog_beside_idle_replicas_is_held_and_caps_at_what_the_fleet_serves() -> None:
    hq = _held(_dm())
    assert hq.active and hq.cap == replicas_for(SERVED, 0.5) == 26
    assert hq.explain() == {"held_queue_cap": 26}


def test_no_episode_begins_without_the_evidence() -> None:
    assert not _held(_dm(), starting=3).active  # replicas still starting: the fleet is not what it ordered
    assert not _held(_dm(growth=0.0)).active  # the queue did not shrink this tick
    assert not _held(_dm(offered=SERVED + 2.0)).active  # growth confirmed over two ticks
    # a queue every replica takes from keeps them busy: served at (or over) half the fleet's pace
    assert not _held(_dm(served=HELD_SHARE * 60 * 1.0)).active
    assert _held(_dm(served=HELD_SHARE * 60 * 1.0 - 0.1)).active
    assert not _held(_dm(), kv=0.97).active  # a full KV cache bounds the pace: no evidence
    assert not _held(_dm(), trusted=False).active  # stale or implausible signals are no evidence
    assert not _held(_dm(waiting=100.0)).active  # 10 work units: under 1 s of the fleet's service
    assert not _held(_dm(), ready=0).active
    assert not _held(_dm(), ready=40, throughput=0.6).active  # 13 of 40 × 0.63 is over half the pace
    assert not _held(_dm(), stats=CapacityStats()).active  # no pace measured: the prior judges nothing


def test_an_episode_lasts_while_the_backlog_stands_or_its_queue_time_lags() -> None:
    # once seen, starting replicas (its own cap rounding up) and a still queue do not end it
    assert _held(_dm(growth=0.0, served=40.0), starting=2, previous=True).active
    gone = _dm(waiting=2.0, growth=-5.0)
    assert _held(gone, q90=30.0, previous=True).active  # held requests finishing report their wait late
    assert not _held(gone, q90=0.5, previous=True).active  # the backlog gone and the queue time back
    assert not _held(gone, q90=None, previous=True).active
    assert not _held(_dm(offered=SERVED + 1.0), previous=True).active  # a new rise ends it
    # A handful joining a queue of a handful is no new rise: the lagging queue time keeps the episode (it
    # ended it before decision change T, and the lag then ordered a hedge and a panic for a step that was over).
    handful = _dm(waiting=4.0, offered=SERVED + 0.01, growth=1.0)
    assert _held(handful, q90=30.0, previous=True).active
    assert not _held(handful, q90=0.5, previous=True).active  # the queue time back: the episode ends
    assert not _held(_dm(), kv=1.0, previous=True).active
    assert not _held(_dm(), trusted=False, previous=True).active


def _sig(waiting: float, served: float, q90: float = 30.0):
    s = signals(work=served, desired=60, waiting=waiting, queue_p90=q90)
    return replace(s, kv_cache_usage=Measured(0.3, 5.0))


def test_decide_neither_drains_nor_panics_for_a_held_backlog_but_does_for_a_shared_one() -> None:
    pol = policy(forecast={"enabled": False})
    state = CoreState(recent_waiting=((985.0, 6000.0),))
    held = decide(pol, _sig(5000.0, SERVED), state, 1000.0)
    assert held.state.held_queue and not held.decision.panic
    cap = held.decision.components["held_queue_cap"]
    assert cap == replicas_for(SERVED, 0.95)  # the prior as stated plans at most 95% per replica
    assert held.decision.components["reactive"] <= cap and held.decision.components["hedge"] <= cap
    # The same backlog with every replica busy (a shared queue): the drain and the panic stand.
    shared = decide(pol, _sig(5000.0, 59.0), state, 1000.0)
    assert not shared.state.held_queue and shared.decision.panic
    assert shared.decision.components["reactive"] > 60 and "held_queue_cap" not in shared.decision.components
    # Next tick the backlog still stands: the episode goes on; once the backlog and its late queue time are
    # gone, it ends.
    on = decide(pol, _sig(4000.0, SERVED), held.state, 1015.0)
    assert on.state.held_queue
    off = decide(pol, _sig(0.0, SERVED, q90=0.2), on.state, 1030.0)
    assert not off.state.held_queue


def test_the_service_of_a_held_backlog_is_no_throughput_sample() -> None:
    pol = policy(capacity={"learn": True})
    reps = ReplicaCounts(desired=60, ready=60)

    def cap(held: bool):
        load = Load(SERVED, 5000.0, 500.0, SERVED, 0.3, queue_held=held, queue_stood=True)
        return capacity(pol, Signals(), reps, load, Learned(), learn=True, since_last_tick=15.0, now=1000.0)

    assert cap(False).stats.samples == (SERVED / 60,)  # a real queue: served/ready is taken as throughput
    assert cap(True).stats.samples == ()


def test_service_beside_a_shrinking_backlog_is_no_throughput_sample_even_while_replicas_start() -> None:
    pol = policy(capacity={"learn": True}, forecast={"enabled": False})
    measured = CapacityStats((1.0,) * 8)  # a replica was seen to drain 1 work unit under a queue
    # the queue stood through the rate window (60 s) the service is read over
    state = CoreState(recent_waiting=tuple((t, 6000.0) for t in (940.0, 955.0, 970.0, 985.0)), capacity=measured)
    starting = tuple(StartingReplica("scheduling", 10.0) for _ in range(5))

    def tick(served: float):
        return decide(pol, _sig_starting(served, starting), state, 1000.0).state

    # 13 work units on 60 ready replicas beside a shrinking backlog: most replicas idle, no sample
    idle = tick(SERVED)
    assert idle.capacity == measured and not idle.held_queue  # replicas starting: no episode either
    # the same backlog with every ready replica busy is a sample of what one drains
    assert tick(59.0).capacity.samples[-1] == 59.0 / 60
    # before any throughput was measured, slow service is how the first samples are taken
    assert decide(pol, _sig_starting(SERVED, starting), replace(state, capacity=CapacityStats()),
                  1000.0).state.capacity.samples == (SERVED / 60,)
    # a full KV cache bounds the pace: the slow service is then what a replica drains
    full = replace(_sig_starting(SERVED, starting), kv_cache_usage=Measured(0.97, 5.0))
    assert decide(pol, full, state, 1000.0).state.capacity.samples[-1] == SERVED / 60


def _sig_starting(served: float, starting: tuple[StartingReplica, ...]):
    return replace(_sig(5000.0, served), replicas=ReplicaCounts(desired=65, ready=60, starting=starting))
