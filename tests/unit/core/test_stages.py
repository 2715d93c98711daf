"""Each stage of the decision on its own: its value and its part of the explanation."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from autoscaler.core.capacity import CapacityStats
from autoscaler.core.coldstart import ColdStartStats, LeadTime
from autoscaler.core.decide import forecast_config
from autoscaler.core.engine_knee import EngineKnee
from autoscaler.core.reason import Reason
from autoscaler.core.signals import ClusterFacts, LatencyHistogram, ReplicaCounts, Signals, StartingReplica
from autoscaler.core.slo_budget import SloBudget
from autoscaler.core.slo_capacity import SloCapacity
from autoscaler.core.stages.bounds import binding, clamp, stuck_unschedulable
from autoscaler.core.stages.capacity import (
    PRIOR_SLO_SHARE,
    Learned,
    Load,
    capacity,
    carried,
    learned_floor,
    untested_floor,
)
from autoscaler.core.stages.demand import (
    DEFAULT_GENERATION_TOKENS,
    confirmed,
    demand,
    queue_growth,
    queue_stood,
    remember_waiting,
    window_change,
    work_per_request,
)
from autoscaler.core.stages.missing import missing_target
from autoscaler.core.stages.panic import panic
from autoscaler.core.stages.predictive import predictive
from autoscaler.core.stages.rate_limit import scale_down, scale_up
from autoscaler.core.stages.reactive import reactive, ready_in
from autoscaler.core.stages.readings import read
from autoscaler.core.stages.sizing import MAX_REPLICAS, replicas_for
from autoscaler.core.stages.slo_feedback import load_factor, relax_floor, within_headroom
from autoscaler.core.stages.stabilize import since, stabilize
from autoscaler.core.state import CoreState

from .helpers import policy, signals

LEAD = LeadTime(median_seconds=180.0, high_seconds=250.0, stages=())


# sizing
# The SLO feedback's headroom over the target utilization (a factor over 1) is off by default (sloFeedback.max 1,
# decision change AH); the tests of that mechanism run with it on.
HEADROOM = {"sloFeedback": {"max": 3.0}}

def test_replicas_for_rounds_up_and_survives_absurd_inputs() -> None:
    assert replicas_for(4.0, 1.0) == 4
    assert replicas_for(4.0000000001, 1.0) == 4  # float noise is not a replica
    assert replicas_for(4.1, 1.0) == 5
    assert replicas_for(float("inf"), 1.0) == MAX_REPLICAS
    assert replicas_for(float("nan"), 1.0) == MAX_REPLICAS
    assert replicas_for(1.0, 0.0) == MAX_REPLICAS
    assert replicas_for(0.0, 0.0) == 0


# demand
def test_work_per_request_starts_at_the_default_request_and_follows_an_ema() -> None:
    cap = policy().capacity
    assert work_per_request(cap, None, 0.0, None) == 1000 / 10000 + DEFAULT_GENERATION_TOKENS / 1000
    assert work_per_request(cap, None, 4.0, 40.0) == 0.1
    assert abs(work_per_request(cap, 0.1, 4.0, 20.0) - (0.1 + 0.2 * (0.2 - 0.1))) < 1e-12
    assert work_per_request(cap, 0.1, 4.0, 0.001) == 0.1  # 4000 s per request: rates out of step, ignored


def test_queue_growth_needs_a_recent_previous_sample() -> None:
    assert queue_growth(((100.0, 10.0),), 40.0, 110.0, 15.0) == 3.0
    assert queue_growth(((100.0, 40.0),), 10.0, 110.0, 15.0) == -3.0  # a draining queue
    assert queue_growth(((100.0, 10.0),), 40.0, 100.0 + 61.0, 15.0) == 0.0  # too old
    assert queue_growth(((100.0, 10.0),), 40.0, 90.0, 15.0) == 0.0  # clock went backwards
    assert queue_growth((), 40.0, 110.0, 15.0) == 0.0


def test_a_queue_draining_over_two_intervals_is_not_demand() -> None:
    pol = policy()
    r = read(pol, signals(work=4.0, desired=4, waiting=10.0, request_rate=40.0))
    draining = demand(pol, r, 0.1, ((985.0, 40.0),), -1.0, 1000.0, 60.0, 4)  # 40 -> 10 waiting in 15 s, after -1/s
    assert draining.growth == -2.0 and draining.offered == pytest.approx(4.0 - 1.0 * draining.work_per_request)
    # Growth and shrinkage that disagree confirm nothing; at most half the service is taken for a drain (the
    # two are read over different windows).
    assert demand(pol, r, 0.1, ((985.0, 40.0),), 1.0, 1000.0, 60.0, 4).offered == 4.0
    fast = demand(pol, r, 0.1, ((985.0, 4000.0),), -500.0, 1000.0, 60.0, 4)
    assert fast.offered == pytest.approx(0.5 * fast.served)
    # An emptied queue: the drain is over, the service is the demand.
    done = demand(pol, read(pol, signals(work=4.0, desired=4, waiting=0.0, request_rate=40.0)), 0.1,
                  ((985.0, 30.0),), -1.0, 1000.0, 60.0, 4)
    assert done.growth == -2.0 and done.offered == 4.0


def test_demand_adds_growth_confirmed_over_two_intervals_and_explains_itself() -> None:
    pol = policy()
    r = read(pol, signals(work=4.0, desired=4, waiting=40.0, request_rate=40.0))
    d = demand(pol, r, 0.1, ((985.0, 10.0),), 1.0, 1000.0, 60.0, 4)
    assert d.served == 4.0 and d.waiting == 40.0 and d.growth == 2.0
    assert d.offered == 4.0 + 2.0 * d.work_per_request  # confirmed by the tick before, at this tick's pace
    assert d.backlog == 40.0 * d.work_per_request
    assert d.explain() == {"offered_work": round(d.offered, 4), "served_work": 4.0, "backlog_work": round(d.backlog, 4)}


def test_confirmed_growth_counts_at_the_newer_pace_under_a_real_queue_and_a_drain_at_the_smaller() -> None:
    # A step that began inside the previous tick: that tick saw only part of it (flash-crowd, minute 60).
    assert confirmed(59.0, 8.0, True) == 59.0
    assert confirmed(8.0, 59.0, True) == 8.0  # a burst that slows counts at its newer, slower pace
    # A handful waiting (no real queue) grows and shrinks with noise: the smaller pace, as before S.
    assert confirmed(59.0, 8.0, False) == 8.0 and confirmed(8.0, 59.0, False) == 8.0
    for real in (True, False):
        assert confirmed(-2.0, -5.0, real) == -2.0 and confirmed(-5.0, -2.0, real) == -2.0  # a drain: the smaller
        assert confirmed(59.0, 0.0, real) == 0.0 and confirmed(59.0, -3.0, real) == 0.0  # one spike: nothing
        assert confirmed(0.0, 59.0, real) == 0.0


def test_a_step_is_answered_at_its_pace_one_tick_after_it_shows() -> None:
    """Minute 60 of flash-crowd: 123 sequences joined the queue in the tick the step began, 884 in the next.
    The second tick orders for the step's pace (59/s), not the first tick's part of it (8/s)."""
    pol = policy()
    first = demand(pol, read(pol, signals(work=2.0, desired=5, waiting=123.0, request_rate=30.0)), 0.1,
                   ((3585.0, 0.0),), 0.0, 3600.0, 60.0, 5)
    assert first.growth == pytest.approx(8.2) and first.offered == 2.0  # not confirmed yet
    second = demand(pol, read(pol, signals(work=2.0, desired=5, waiting=1007.0, request_rate=30.0)), 0.1,
                    first.recent, first.growth, 3615.0, 60.0, 5)
    assert second.offered == pytest.approx(2.0 + 884.0 / 15.0 * second.work_per_request)
    # The same two ticks with a few sequences per replica waiting (60 ready): the smaller pace.
    few = demand(pol, read(pol, signals(work=2.0, desired=60, waiting=150.0, request_rate=30.0)), 0.1,
                 ((3600.0, 30.0),), 1.0, 3615.0, 60.0, 60)
    assert few.growth == pytest.approx(8.0) and few.offered == pytest.approx(2.0 + 1.0 * few.work_per_request)


def test_window_change_reads_the_queue_over_the_rate_window_and_remember_keeps_what_it_needs() -> None:
    recent = ((880.0, 900.0), (940.0, 600.0), (955.0, 500.0), (970.0, 400.0), (985.0, 300.0))
    assert window_change(recent, 0.0, 1000.0, 15.0, 60.0) == -10.0  # 600 -> 0 over the 60 s since 940
    assert window_change(recent[-1:], 0.0, 1000.0, 15.0, 60.0) is None  # only a tick: not the service's span
    assert window_change(((945.0, 550.0),), 0.0, 1000.0, 15.0, 60.0) == -10.0  # within half a tick of a window
    assert window_change(((900.0, 10.0),), 0.0, 1000.0, 15.0, 60.0) is None  # older than a window and half a tick
    assert window_change((), 0.0, 1000.0, 15.0, 60.0) is None
    kept = remember_waiting(recent, 0.0, 1000.0, 15.0, 60.0)
    assert kept == (*recent[1:], (1000.0, 0.0))  # 880 is past the window and a tick
    assert remember_waiting(recent, None, 1000.0, 15.0, 60.0) == ()  # not read: the window starts afresh
    assert remember_waiting(((1010.0, 5.0),), 1.0, 1000.0, 15.0, 60.0) == ((1000.0, 1.0),)  # clock went back
    # A source with a two-minute rate window (`--rate-window 2m`): the change is read over two minutes.
    longer = ((875.0, 1200.0), *recent)
    assert window_change(longer, 0.0, 1000.0, 15.0, 120.0) == pytest.approx(-1200.0 / 125.0)  # the oldest
    assert window_change(recent, 0.0, 1000.0, 15.0, 120.0) == pytest.approx(-900.0 / 120.0)
    assert window_change(recent[1:], 0.0, 1000.0, 15.0, 120.0) is None  # a minute is not two
    assert remember_waiting(longer, 0.0, 1000.0, 15.0, 120.0)[0] == (875.0, 1200.0)


def test_a_queue_stood_only_if_every_sample_of_the_rate_window_was_a_real_queue() -> None:
    # 4 ready replicas: a real queue is 16 waiting or more (core.capacity.real_queue)
    stood = ((930.0, 0.0), (940.0, 40.0), (955.0, 30.0), (970.0, 20.0), (985.0, 16.0), (1000.0, 50.0))
    assert queue_stood(stood, 1000.0, 15.0, 60.0, 4)  # 930 is older than the window and half a tick
    assert not queue_stood(stood, 1000.0, 15.0, 60.0, 5)  # 16 is no real queue for 5 replicas
    dipped = ((940.0, 40.0), (955.0, 3.0), (970.0, 40.0), (985.0, 40.0), (1000.0, 40.0))
    assert not queue_stood(dipped, 1000.0, 15.0, 60.0, 4)  # it came and went inside the window
    assert not queue_stood(stood[-2:], 1000.0, 15.0, 60.0, 4)  # seen for one tick only: not the window's span
    assert not queue_stood(((1000.0, 500.0),), 1000.0, 15.0, 60.0, 4)  # this tick alone
    assert not queue_stood((), 1000.0, 15.0, 60.0, 4)
    assert queue_stood(((945.0, 40.0), (1000.0, 40.0)), 1000.0, 15.0, 60.0, 4)  # within half a tick of a window
    assert not queue_stood(stood, 1000.0, 15.0, 120.0, 4)  # a two-minute window: 930 was empty
    # as the capacity stage uses it: the service beside a queue seen at one scrape is no throughput sample
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    reps = ReplicaCounts(desired=4, ready=4)

    def sampled(stood: bool) -> tuple[float, ...]:
        return capacity(pol, Signals(), reps, Load(8.0, 50.0, 50.0, kv=0.3, queue_stood=stood), Learned(),
                        learn=True, since_last_tick=15.0, now=1000.0).stats.samples

    assert sampled(True) == (2.0,) and sampled(False) == ()
    # a full KV cache bounds the pace whether or not a queue stood
    assert capacity(pol, Signals(), reps, Load(8.0, 0.0, 0.0, kv=0.97, queue_stood=False), Learned(), learn=True,
                    since_last_tick=15.0, now=1000.0).stats.samples == (2.0,)


def test_demand_subtracts_the_drain_over_the_window_the_service_was_read_over() -> None:
    """Replicas came up under a standing backlog: the window's service is still the small fleet's while one
    tick's drain is the large fleet's. Over the window the two agree: arrivals = service + the change."""
    pol = policy()
    r = read(pol, signals(work=9.0, desired=30, waiting=14_500.0, request_rate=90.0))
    recent = ((940.0, 16_600.0), (955.0, 17_400.0), (970.0, 17_400.0), (985.0, 16_000.0))
    d = demand(pol, r, 0.1, recent, -90.0, 1000.0, 60.0, 30)
    assert d.offered == pytest.approx(9.0 + (14_500.0 - 16_600.0) / 60.0 * d.work_per_request)
    # Over one tick (no sample a window old) the drain would have taken half the service.
    assert demand(pol, r, 0.1, recent[-1:], -90.0, 1000.0, 60.0, 30).offered == pytest.approx(4.5)
    # The drain just ended: the window still served it, so it is still not demand.
    done = read(pol, signals(work=9.0, desired=30, waiting=0.0, request_rate=90.0))
    assert demand(pol, done, 0.1, ((940.0, 600.0), (985.0, 5.0)), -1.0, 1000.0, 60.0, 30).offered == pytest.approx(
        9.0 - 10.0 * 0.1)
    # A queue growing over two ticks counts at its one-tick pace when that is faster than the window's.
    rising = read(pol, signals(work=4.0, desired=4, waiting=400.0, request_rate=40.0))
    up = demand(pol, rising, 0.1, ((940.0, 0.0), (985.0, 100.0)), 30.0, 1000.0, 60.0, 4)
    assert up.growth == 20.0 and up.offered == pytest.approx(4.0 + 20.0 * up.work_per_request)


# capacity
def _cap(pol, reps, served, waiting, kv, learn=True, slo=None, steady=None, signals=None, now=1000.0,
         backlog=None, budget=None, stats=None):
    # backlog: the queue in work units (default: one replica-second per waiting sequence)
    return capacity(pol, signals or Signals(), reps,
                    Load(served, waiting, waiting if backlog is None else backlog, kv=kv, queue_stood=True),
                    Learned(stats or CapacityStats(), slo or SloCapacity(), steady_since=steady,
                            budget=budget or SloBudget()), learn=learn, since_last_tick=15.0, now=now)


def test_capacity_learns_throughput_only_under_a_real_queue_and_caps_planned_utilization() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    reps = ReplicaCounts(desired=4, ready=4)
    idle = _cap(pol, reps, 8.0, 0.0, 0.3)
    assert idle.stats.samples == () and idle.settled_since == 1000.0 and idle.steady_since == 1000.0
    assert idle.usable == PRIOR_SLO_SHARE  # nothing measured: the prior's share at the SLO
    assert _cap(pol, reps, 8.0, 5.0, 0.3).stats.samples == ()  # a handful waiting is vLLM at any load
    busy = _cap(pol, reps, 8.0, 50.0, 0.3)
    assert busy.stats.samples == (2.0,) and busy.settled_since is None
    # 50 waiting that the fleet serves in 0.5 s (under the 1-s queue budget): requests wait for the next
    # engine step, not for capacity, so served/ready is a utilisation, not a throughput sample.
    assert _cap(pol, reps, 8.0, 50.0, 0.3, backlog=4.0).stats.samples == ()
    assert _cap(pol, reps, 8.0, 0.0, 0.97).stats.samples == (2.0,)
    assert _cap(pol, reps, 8.0, 50.0, 0.3, learn=False).stats.samples == ()
    off = policy(capacity={"learn": False, "targetUtilization": 1.0})
    assert _cap(off, reps, 8.0, 0.0, 0.3).usable == 0.95  # the prior as stated, never past 95%


def _hist(total: float, within: float, bound: float = 2.0) -> LatencyHistogram:
    return LatencyHistogram((bound, float("inf")), (within, total), age_seconds=5.0)


def test_capacity_at_the_slo_is_learned_only_from_clean_windows() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    reps = ReplicaCounts(desired=4, ready=4)
    sig = Signals(ttft_histogram=_hist(100.0, 100.0), queue_time_histogram=_hist(100.0, 100.0, 0.2))
    # Steady long enough: one window at load 0.5 per replica, none missed.
    ok = _cap(pol, reps, 2.0, 0.0, 0.3, steady=900.0, signals=sig)
    assert ok.slo.bins and ok.slo.bins[0][1:] == (1.0, 100.0, 0.0)
    # Just after a change (window includes it), while replicas start, or with stale metrics: nothing learned.
    assert _cap(pol, reps, 2.0, 0.0, 0.3, steady=990.0, signals=sig).slo.bins == ()
    starting = ReplicaCounts(desired=5, ready=4, starting=(StartingReplica("warmup", 10.0),))
    assert _cap(pol, starting, 2.0, 0.0, 0.3, steady=900.0, signals=sig).slo.bins == ()
    assert _cap(pol, reps, 2.0, 0.0, 0.3, learn=False, steady=900.0, signals=sig).slo.bins == ()


def test_misses_count_against_a_load_only_when_requests_queued() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    reps = ReplicaCounts(desired=4, ready=4)
    infeasible = Signals(ttft_histogram=_hist(100.0, 90.0), queue_time_histogram=_hist(100.0, 100.0, 0.2))
    loaded = Signals(ttft_histogram=_hist(100.0, 90.0), queue_time_histogram=_hist(100.0, 90.0, 0.2))
    assert _cap(pol, reps, 2.0, 0.0, 0.3, steady=900.0, signals=infeasible).slo.bins[0][3] == 0.0
    assert _cap(pol, reps, 2.0, 0.0, 0.3, steady=900.0, signals=loaded).slo.bins[0][3] == pytest.approx(10.0)


def test_planned_load_follows_the_learned_knee() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    reps = ReplicaCounts(desired=4, ready=4)
    slo = SloCapacity()
    for _ in range(10):
        slo = slo.observe(0.6, 1000.0, 0.0).observe(0.75, 1000.0, 50.0)
    got = _cap(pol, reps, 2.0, 0.0, 0.3, slo=slo)
    assert got.factor == pytest.approx(slo.knee(0.99)[0]) and 0.7 < got.usable < 0.75


def test_load_factor_rises_on_misses_only_once_settled_and_relaxes_with_margin() -> None:
    pol = policy(capacity=HEADROOM)
    assert load_factor(pol, 0.8, 1.0, 15.0, 0.0) == 1.0  # not settled long enough
    assert load_factor(pol, 0.8, 1.0, 15.0, 600.0) > 1.0
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0) < 2.0
    assert load_factor(pol, None, 2.0, 15.0, 600.0) == 2.0  # nothing to judge: hold
    assert load_factor(pol, 0.0, 1.0, 1e9, 600.0) <= pol.capacity.slo_feedback.max


def test_load_factor_relaxes_only_while_the_fleet_carries_its_plan() -> None:
    pol = policy(capacity=HEADROOM)
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0, at_plan=False) == 2.0  # a held fleet's margin: hold
    assert load_factor(pol, 0.8, 1.0, 15.0, 600.0, at_plan=False) > 1.0  # misses still raise it


def test_misses_while_replicas_start_raise_the_load_factor_slowly_only_while_the_budget_burns() -> None:
    pol = policy(capacity=HEADROOM)
    settled = load_factor(pol, 0.8, 1.0, 15.0, 600.0)
    assert load_factor(pol, 0.8, 1.0, 15.0, 0.0, burn=None) == 1.0  # too few requests judged: hold
    assert load_factor(pol, 0.8, 1.0, 15.0, 0.0, burn=1.9) == 1.0  # a start's misses, budget not burning
    starting = load_factor(pol, 0.8, 1.0, 15.0, 0.0, burn=2.0)
    assert 1.0 < starting < settled
    # a tenth of the settled pace: the same exponent, scaled
    assert math.log(starting) == pytest.approx(math.log(settled) / 10)


def test_the_headroom_over_the_target_is_let_go_once_the_last_minutes_stop_burning() -> None:
    pol = policy(capacity=HEADROOM)
    hours, calm, burning = 3.0, 0.2, 0.6  # the hours' budget still burns; the last minutes' is calm or not
    assert relax_floor(None, None) == 0.0 and relax_floor(0.4, burning) == 0.0  # hours on track: all the way
    assert relax_floor(hours, calm) == 1.0 and relax_floor(hours, None) is None and relax_floor(hours, burning) is None
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0, burn=hours, recent_burn=burning) == 2.0  # both burn: hold
    let_go = load_factor(pol, 1.0, 2.0, 15.0, 600.0, burn=hours, recent_burn=calm)
    assert let_go == pytest.approx(load_factor(pol, 1.0, 2.0, 15.0, 600.0))  # at the usual pace
    assert 1.0 < let_go < 2.0
    assert load_factor(pol, 1.0, 1.01, 60.0, 600.0, burn=hours, recent_burn=calm) == 1.0  # no further than 1
    assert load_factor(pol, 1.0, 1.0, 60.0, 600.0, burn=hours, recent_burn=calm) == 1.0
    assert load_factor(pol, 1.0, 0.9, 60.0, 600.0, burn=hours, recent_burn=calm) == 0.9  # hotter: the hours'
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0, burn=hours, recent_burn=calm, at_plan=False) == 2.0
    assert load_factor(pol, 0.995, 2.0, 15.0, 600.0, burn=hours, recent_burn=calm) == 2.0  # not a calm window


def test_misses_while_starting_past_the_factors_reach_leave_it_as_it_is() -> None:
    pol = policy(capacity=HEADROOM)
    assert load_factor(pol, 0.8, 1.0, 15.0, 0.0, burn=2.0, coverable=False) == 1.0
    assert load_factor(pol, 0.8, 1.0, 15.0, 600.0, coverable=False) > 1.0  # settled misses still raise it
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0, coverable=False) < 2.0  # and calm windows relax it


def test_within_headroom_is_what_the_factor_at_its_maximum_would_have_carried() -> None:
    pol = policy(capacity={"sloFeedback": {"max": 1.3}})
    # 4 ready at factor 0.8 would be 6.5 at 1.3: 6.5 × 0.5 = 3.25 replica-equivalents at a 0.5 capacity
    assert within_headroom(pol, 3.25, 4, 0.8, 0.5)
    assert not within_headroom(pol, 3.3, 4, 0.8, 0.5)
    assert not within_headroom(pol, 2.1, 4, 1.3, 0.5)  # at its maximum already: nothing more to buy
    assert within_headroom(pol, 100.0, 0, 1.0, 0.5)  # nothing ready: nothing to judge


def test_an_episode_past_the_factors_reach_buys_no_headroom_until_the_fleet_settles() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0, "sloFeedback": {"max": 1.3}})
    starting = ReplicaCounts(desired=20, ready=4, starting=(StartingReplica("warmup", 10.0),) * 16)
    missing = Signals(ttft_histogram=_hist(1000.0, 800.0))
    burning = SloBudget().observe(0.5, 10_000.0, 60.0, 60.0)
    assert (burning.burn(0.99) or 0.0) >= 2.0

    def tick(reps: ReplicaCounts, offered: float, beyond: bool, waiting: float = 50.0):
        return capacity(pol, missing, reps, Load(min(offered, 2.0), waiting, waiting, offered, 0.3, queue_stood=True),
                        Learned(budget=burning, beyond_headroom=beyond), learn=True, since_last_tick=15.0,
                        now=1000.0)

    # A rise the factor could have covered (2.4 on 4 ready at 0.8 of the prior each): its misses raise it.
    rise = tick(starting, 2.4, False)
    assert rise.load_factor > 1.0 and not rise.beyond_headroom
    # A step five times past it: the misses are the step's, not the plan's.
    step = tick(starting, 10.0, False)
    assert step.load_factor == 1.0 and step.beyond_headroom
    # Replicas come up and the step's backlog drains through them at a load they could carry: still the step.
    up = ReplicaCounts(desired=20, ready=16, starting=(StartingReplica("warmup", 10.0),) * 4)
    drain = tick(up, 2.4, step.beyond_headroom)
    assert drain.load_factor == 1.0 and drain.beyond_headroom
    # Once the fleet settles (nothing starting, no queue) the episode is over.
    settled = tick(ReplicaCounts(desired=20, ready=20), 2.4, drain.beyond_headroom, waiting=0.0)
    assert not settled.beyond_headroom


def test_the_load_factor_relaxes_only_once_the_budget_is_well_on_track() -> None:
    pol = policy(capacity=HEADROOM)
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0, burn=0.5) == 2.0  # hours of misses still on the books
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0, burn=0.49) < 2.0
    assert load_factor(pol, 1.0, 2.0, 15.0, 600.0, burn=None) < 2.0


def test_only_a_window_that_used_a_tenth_of_the_budget_or_less_relaxes_the_load_factor() -> None:
    pol = policy(capacity=HEADROOM)  # 99%: an error budget of 1%
    assert load_factor(pol, 0.9991, 2.0, 15.0, 600.0) < 2.0  # a tenth of the budget used: calm
    assert load_factor(pol, 0.9985, 2.0, 15.0, 600.0) == 2.0  # 0.15% missed: near the knee, hold
    assert load_factor(pol, 0.995, 2.0, 15.0, 600.0) == 2.0  # half the budget to spare is no margin


# predictive
def test_predictive_is_zero_when_disabled_and_forecasts_with_a_cache_when_enabled() -> None:
    off = policy()
    p = predictive(off, forecast_config(off), None, None, None, None, 0.0, 5.0, 1.0, 250.0)
    assert p.replicas == 0 and p.forecast_work is None and p.explain() == {"predictive": 0}
    on = policy(forecast={"enabled": True})
    cfg = forecast_config(on)
    p1 = predictive(on, cfg, None, None, None, None, 0.0, 5.0, 1.0, 250.0)
    assert p1.forecast_work is not None and p1.replicas >= 5 and p1.cache is not None
    p2 = predictive(on, cfg, p1.forecast, 60.0, None, p1.cache, 10.0, 50.0, 1.0, 250.0)
    assert p2.forecast_work == p1.forecast_work  # same bucket: the cached forecast


# reactive
def test_ready_in_counts_the_slowest_schedulable_starting_replica() -> None:
    pol = policy()
    none = ReplicaCounts(desired=4, ready=4)
    assert ready_in(pol, none, ColdStartStats(), ClusterFacts(), LEAD) == 180.0
    starting = ReplicaCounts(desired=6, ready=4, starting=(
        StartingReplica("warmup", 100.0, 10.0), StartingReplica("node_provisioning", 900.0, 0.0, unschedulable=True)))
    assert ready_in(pol, starting, ColdStartStats(), ClusterFacts(), LEAD) == 50.0  # 60 s warmup, 10 s in


def test_reactive_drains_the_projected_backlog_and_counts_concurrency() -> None:
    pol = policy(capacity={"maxConcurrency": 10})
    r = reactive(pol, offered=6.0, backlog=12.0, waiting=30.0, running=50.0, ready_replicas=4, factor=1.0,
                 usable=1.0, ready_in_seconds=60.0)
    assert r.projected_backlog == 12.0 + (6.0 - 4.0) * 60.0
    assert r.replicas == replicas_for(6.0 + r.projected_backlog / 120.0, 1.0)
    assert r.concurrency == 8  # 80 sequences at 10 per replica
    assert r.explain() == {"projected_backlog_work": 132.0}
    assert reactive(policy(), 6.0, 0.0, 0.0, 50.0, 4, 1.0, 1.0, 60.0).concurrency == 0  # no limit set


# panic
def test_panic_starts_on_a_breach_and_lasts_hold_seconds() -> None:
    pol = policy()  # TTFT SLO 2 s: queue budget 1 s
    assert panic(pol, 0.5, 1.0, None, 100.0).active is False
    p = panic(pol, 1.5, None, None, 100.0)
    assert p.active and p.until == 220.0
    assert panic(pol, None, None, p.until, 200.0).active
    assert panic(pol, None, None, p.until, 220.0) == type(p)(False, None)
    assert panic(pol, None, 3.0, None, 100.0).active  # TTFT over its SLO
    assert not panic(policy(scaleUp={"panic": {"enabled": False}}), 9.0, 9.0, None, 100.0).active


# bounds
def test_binding_is_the_largest_candidate_capped_at_max() -> None:
    b = binding({"predictive": 3, "reactive": 5, "concurrency": 5, "floor": 1}, 10)
    assert (b.raw, b.binding) == (5, "reactive")
    assert binding({"predictive": 30, "reactive": 5}, 10) == type(b)(10, "max")


def test_stuck_counts_unschedulable_replicas_past_the_limit() -> None:
    pol = policy(coldStart={"unschedulableLimitSeconds": 60})
    reps = ReplicaCounts(desired=3, ready=1, starting=(StartingReplica("scheduling", 61.0, unschedulable=True),
                                                       StartingReplica("scheduling", 59.0, unschedulable=True),
                                                       StartingReplica("warmup", 600.0)))
    assert stuck_unschedulable(pol, reps) == 1


def test_clamp_applies_floor_then_max() -> None:
    assert clamp(2, Reason.SCALE_DOWN, 3, 10) == (3, Reason.SCALE_UP_FLOOR)
    assert clamp(12, Reason.STEADY, 3, 10) == (10, Reason.SCALE_DOWN_MAX)
    assert clamp(5, Reason.STEADY, 3, 10) == (5, Reason.STEADY)


# stabilize
def test_stabilize_takes_the_highest_recommendation_in_the_window() -> None:
    recs = ((100.0, 9), (200.0, 6), (300.0, 4))
    assert since(recs, 150.0, 400.0) == ((200.0, 6), (300.0, 4))
    s = stabilize(recs, 400.0, 250.0, 15.0, current=8, raw=3)
    assert s.value == 6 and s.recommendations == ((200.0, 6), (300.0, 4), (400.0, 3))


def test_stabilize_without_history_counts_the_current_count_as_recommended() -> None:
    s = stabilize((), 400.0, 300.0, 15.0, current=8, raw=3)
    assert s.value == 8 and s.recommendations == ((400.0, 8), (400.0, 3))


def test_stabilize_holds_only_the_sustained_part_of_a_recommendation() -> None:
    # This tick asks for 12 (a queue to drain) of which 7 is sustained: 12 now, only 7 remembered.
    s = stabilize(((300.0, 5),), 400.0, 600.0, 15.0, current=5, raw=12, held=7)
    assert s.value == 12 and s.recommendations == ((400.0, 7),)
    # Next tick the queue has drained: the window holds 7, not 12.
    assert stabilize(s.recommendations, 415.0, 600.0, 15.0, current=12, raw=4, held=4).value == 7
    # `held` above `raw` is clamped to it.
    assert stabilize((), 400.0, 600.0, 15.0, current=3, raw=4, held=9).recommendations[-1] == (400.0, 4)


# rate limit
def test_scale_up_steps_from_the_lowest_count_of_the_period() -> None:
    pol = policy(scaleUp={"maxStepReplicas": 2, "maxStepPercent": 50, "periodSeconds": 30})
    assert scale_up(pol, (), 100.0, 4, 30, "reactive", panic=False) == (6, Reason.SCALE_UP_RATE_LIMITED)
    assert scale_up(pol, ((80.0, 2),), 100.0, 4, 30, "reactive", panic=False) == (4, Reason.SCALE_UP_RATE_LIMITED)
    assert scale_up(pol, (), 100.0, 4, 5, "predictive", panic=False) == (5, Reason.SCALE_UP_PREDICTIVE)
    assert scale_up(pol, (), 100.0, 4, 20, "reactive", panic=True) == (20, Reason.SCALE_UP_REACTIVE)


def test_scale_down_steps_from_the_highest_count_of_the_period_never_below_stabilized() -> None:
    pol = policy(scaleDown={"maxStepReplicas": 1, "maxStepPercent": 10, "periodSeconds": 60})
    assert scale_down(pol, (), 100.0, 20, 5) == 18  # 10% of 20
    # 22 decided earlier in the period: the step counts from there (22 - 2), so this tick cannot go lower.
    assert scale_down(pol, ((50.0, 22),), 100.0, 20, 5) == 20
    assert scale_down(pol, ((30.0, 22),), 100.0, 20, 5) == 18  # that decision is older than the period
    assert scale_down(pol, (), 100.0, 20, 19) == 19  # never below the stabilized recommendation
    # 30 decided but the target still says 20 (dry run, another writer): 30 - 3 is no reason to grow.
    assert scale_down(pol, ((90.0, 30),), 100.0, 20, 5) == 20


# missing demand
def test_missing_target_never_scales_down() -> None:
    assert missing_target(policy(), 7) == 7
    assert missing_target(policy(onMissingMetrics={"action": "fixed", "replicas": 4}), 7) == 7
    assert missing_target(policy(onMissingMetrics={"action": "fixed", "replicas": 9}), 7) == 9
    window = {"start": "08:00", "end": "09:00", "minReplicas": 12}
    assert missing_target(policy(replicas={"min": 1, "max": 50, "floorSchedule": [window]},
                                 onMissingMetrics={"action": "floor"}), 7) == 12


# readings
def test_readings_use_only_fresh_plausible_values_and_name_the_rest() -> None:
    from dataclasses import replace

    from autoscaler.core.signals import Measured

    pol = policy(capacity={"maxConcurrency": 16})
    base = signals(work=4.0, desired=4, queue_p90=0.2)
    base = replace(base, ttft_p90_seconds=Measured(0.5, 5.0))
    r = read(pol, base)
    assert r.unknown == () and r.implausible == () and r.waiting == 0.0 and r.kv_cache_usage == 0.3
    bad = replace(base, waiting=Measured(1e308, 5.0), kv_cache_usage=Measured(1.5, 5.0),
                  running=Measured(float("nan"), 5.0), request_rate=Measured(float("inf"), 5.0))
    r = read(pol, bad)
    assert r.implausible == ("request_rate", "running", "waiting", "kv_cache_usage")
    assert set(r.unknown) == {"request_rate", "running", "waiting", "kv_cache_usage"}
    assert r.waiting is None and r.kv_cache_usage is None
    stale = replace(base, waiting=Measured(400.0, 600.0))
    assert read(pol, stale).unknown == ("waiting",) and read(pol, stale).implausible == ()


def test_readings_tolerate_what_an_engine_may_not_report() -> None:
    from dataclasses import replace

    from autoscaler.core.signals import Measured

    pol = policy()
    # No KV gauge, no TTFT histogram (TGI), no quantile (no request finished): nothing to distrust.
    tgi = replace(signals(work=4.0, desired=4), kv_cache_usage=Measured(), ttft_p90_seconds=Measured())
    assert read(pol, tgi).unknown == ()
    # The last known quantile ages while nothing finishes: expected at idle, a fault while requests finish.
    idle = replace(signals(work=0.0, desired=4, request_rate=0.0), queue_time_p90_seconds=Measured(0.2, 900.0))
    assert read(pol, idle).unknown == ()
    busy = replace(signals(work=4.0, desired=4, request_rate=40.0), queue_time_p90_seconds=Measured(0.2, 900.0))
    assert read(pol, busy).unknown == ("queue_time_p90_seconds",)
    # Signals this policy does not use are never required: running without maxConcurrency, quantiles
    # without panic.
    no_panic = policy(scaleUp={"panic": {"enabled": False}})
    assert read(no_panic, replace(busy, running=Measured(1.0, 900.0))).unknown == ()
    # Absent waiting or request rate (every engine reports them) is unknown.
    assert read(pol, replace(tgi, waiting=Measured(), request_rate=Measured())).unknown == ("request_rate", "waiting")


def test_remembered_histories_keep_only_what_can_still_be_an_extreme() -> None:
    from autoscaler.core.stages.stabilize import remember_extremes, remember_max

    recs = remember_max(remember_max(remember_max((), 0.0, 5), 15.0, 8), 30.0, 6)
    assert recs == ((15.0, 8), (30.0, 6))  # 5 is below a later 8: never again a window's maximum
    assert remember_max(recs, 45.0, 9) == ((45.0, 9),)
    h: tuple[tuple[float, int], ...] = ()
    for t, r in enumerate((5, 3, 7, 4, 6)):
        h = remember_extremes(h, float(t), r)
    assert h == ((1.0, 3), (2.0, 7), (3.0, 4), (4.0, 6))  # 5 is neither the lowest nor the highest of any later period
    for start in range(5):  # min and max over every period ending now are unchanged
        window = [r for t, r in h if t >= start]
        full = [r for t, r in enumerate((5, 3, 7, 4, 6)) if t >= start]
        assert (min(window), max(window)) == (min(full), max(full))


def test_history_stays_short_over_a_long_window() -> None:
    from autoscaler.core import CoreState, decide

    pol = policy(scaleDown={"stabilizationWindowSeconds": 86400})  # the longest window the policy allows
    state = CoreState()
    for i in range(2000):
        state = decide(pol, signals(work=3.0 + (i % 7), desired=10), state, 15.0 * i).state
    assert len(state.recommendations) <= 10 and len(state.decisions) <= 20


def test_a_long_gap_is_bridged_with_the_history_observe_would_carry() -> None:
    import numpy as np

    from autoscaler.core.stages.predictive import MAX_CARRIED_BUCKETS, bridge_gap
    from forecasting import ForecastConfig, new_state, observe

    cfg = ForecastConfig(method="last", step_seconds=60.0, history_seconds=86400.0)
    s = new_state(cfg)
    for i in range(120):
        s = observe(cfg, s, 60.0 * i, 3.0 + (i % 5))
    now = 60.0 * (119 + MAX_CARRIED_BUCKETS + 200)
    slow = observe(cfg, s, now, 9.0)
    fast = observe(cfg, bridge_gap(cfg, s, now), now, 9.0)
    assert fast.bucket_index == slow.bucket_index and fast.bucket_sum == slow.bucket_sum
    assert np.array_equal(fast.history.to_array(), slow.history.to_array())
    assert bridge_gap(cfg, s, 60.0 * 130) is s  # short gaps are left to observe()


def test_a_restored_history_is_carried_over_the_downtime() -> None:
    from autoscaler.core.forecast_seed import ForecastSeed

    seed = ForecastSeed(60.0, 600.0, (1.0, 2.0, 3.0))  # buckets 10, 11, 12 (the last one open)
    carried = seed.carried_to(60.0 * 16 + 5, 86400.0)  # now in bucket 16: 13, 14, 15 are missing
    assert carried.values == (1.0, 2.0, 3.0, 3.0, 3.0, 3.0) and carried.first_t_seconds == 600.0
    short = seed.carried_to(60.0 * 16 + 5, 240.0)  # keep 4 buckets of history (+ the open one)
    assert short.values == (2.0, 3.0, 3.0, 3.0, 3.0) and short.first_t_seconds == 660.0
    assert seed.carried_to(60.0 * 13, 86400.0) is seed  # nothing missing
    assert seed.carried_to(60.0 * 13 + 1e7, 86400.0) is seed  # longer than the history: starts over


def test_the_steady_clock_waits_for_a_queue_left_from_before_the_fleet_grew() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    reps = ReplicaCounts(desired=4, ready=4)
    inherited = _cap(pol, reps, 2.0, 100.0, 0.3)  # just reached its size, 25 waiting per replica
    assert inherited.steady_since is None
    assert _cap(pol, reps, 2.0, 0.0, 0.3).steady_since == 1000.0
    # A queue that builds once the fleet is steady is overload at this load: the clock keeps running.
    assert _cap(pol, reps, 2.0, 100.0, 0.3, steady=900.0).steady_since == 900.0


def test_capacity_explores_past_the_evidence_only_while_the_whole_slo_has_budget_to_spare() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    reps = ReplicaCounts(desired=4, ready=4)
    held = SloCapacity()
    for _ in range(10):  # windows at load 1.0 per replica, all within the SLO: no knee, 1.0 seen to hold
        held = held.observe(1.0, 100.0, 0.0)
    top = held.knee(0.99)[1]
    assert top is not None
    spare, on_budget, over = (SloBudget(10_000.0, m) for m in (20.0, 80.0, 300.0))  # burn 0.2, 0.8, 3
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=held).factor == pytest.approx(top * 1.1)  # unknown: explore
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=held, budget=spare).factor == pytest.approx(top * 1.1)
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=held, budget=on_budget).factor == pytest.approx(top)
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=held, budget=over).factor == pytest.approx(top * 0.9)
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=held, budget=over).explain()["capacity_explore"] == -0.1


def test_the_capacity_explains_the_slo_budgets_burns_that_move_the_load_factor() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    assert pol.slo.quantile == 0.99
    reps = ReplicaCounts(desired=4, ready=4)
    quiet = _cap(pol, reps, 2.0, 0.0, 0.3).explain()
    assert "slo_burn" not in quiet and "slo_recent_burn" not in quiet  # too few requests judged to say
    # The hours missed 3% (three times the 1% budget), the last minutes 0.5% (half of it): the load factor holds
    # its headroom over 1 until the recent burn is under half (stages/slo_feedback.relax_floor).
    burning = SloBudget(10_000.0, 300.0, 1_000.0, 5.0)
    out = _cap(pol, reps, 2.0, 0.0, 0.3, budget=burning).explain()
    assert out["slo_burn"] == pytest.approx(3.0, rel=1e-3)
    assert out["slo_recent_burn"] == pytest.approx(0.5, rel=1e-3)
    only_hours = _cap(pol, reps, 2.0, 0.0, 0.3, budget=SloBudget(10_000.0, 300.0)).explain()
    assert only_hours["slo_burn"] == pytest.approx(3.0, rel=1e-3) and "slo_recent_burn" not in only_hours
    off = policy(capacity={"learn": False, "targetUtilization": 1.0})  # the feedback reads them without learning
    assert _cap(off, reps, 2.0, 0.0, 0.3, budget=burning).explain()["slo_burn"] == pytest.approx(3.0, rel=1e-3)


def test_a_scale_down_stops_where_the_load_seen_to_hold_ends_until_a_knee_is_found() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    seen = SloCapacity()
    for _ in range(10):  # 2.0 of work on 4 replicas: 0.5 each, held the SLO; the prior (0.8) says 3 do
        seen = seen.observe(0.5, 100.0, 0.0)
    top = seen.knee(0.99)[1]
    assert top is not None and 0.5 <= top < 0.55
    reps = ReplicaCounts(desired=4, ready=4)
    cp = _cap(pol, reps, 2.0, 0.0, 0.3, slo=seen)
    assert cp.explore == pytest.approx(0.1) and cp.factor == PRIOR_SLO_SHARE  # the plan trusts the prior
    # 3 replicas would carry 0.67 each, more than 10% past 0.54: no step down to it.
    assert untested_floor(cp, 2.0, 4) == replicas_for(2.0, top * 1.1) == 4
    assert untested_floor(cp, 1.5, 4) == 3  # demand fell: 0.5 each on 3 is within what held
    assert untested_floor(cp, 9.0, 4) == 4  # never above the current count: scale-ups are not its business
    burning = _cap(pol, reps, 2.0, 0.0, 0.3, slo=seen, budget=SloBudget(10_000.0, 300.0))  # explore −10%
    assert untested_floor(burning, 1.62, 4) == 4 and untested_floor(cp, 1.62, 4) == 3
    # No bound: nothing seen yet, a knee found (evidence enough), learning off, no demand.
    assert untested_floor(_cap(pol, reps, 2.0, 0.0, 0.3), 2.0, 4) == 0
    kneed = seen
    for _ in range(10):
        kneed = kneed.observe(0.6, 100.0, 10.0)
    assert untested_floor(_cap(pol, reps, 2.0, 0.0, 0.3, slo=kneed), 2.0, 4) == 0
    fixed = policy(capacity={"learn": False})
    assert untested_floor(_cap(fixed, reps, 2.0, 0.0, 0.3, slo=seen), 2.0, 4) == 0
    assert untested_floor(cp, 0.0, 4) == 0


def test_a_knee_under_the_floor_counts_once_a_replica_was_measured_slower_than_the_prior() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0, "learnMinFactor": 0.5})
    reps = ReplicaCounts(desired=4, ready=4)
    knee = SloCapacity()
    for _ in range(10):  # the SLO holds at 0.3 per replica and breaks at 0.43
        knee = knee.observe(0.3, 100.0, 0.0).observe(0.43, 100.0, 10.0)
    over = knee.knee(0.99)[0]
    assert over is not None and over < 0.5
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=knee).factor == pytest.approx(0.5)  # prior unmeasured: floored
    slow = CapacityStats((0.7,) * 40)  # drained 0.7 of the prior under a real queue
    floor = learned_floor(pol.capacity, slow.factor(pol.capacity))
    assert floor == pytest.approx(0.5 * slow.factor(pol.capacity)) and floor < 0.4
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=knee, stats=slow).factor == pytest.approx(over)
    fast = CapacityStats((1.4,) * 40)  # faster than the prior: the floor stays at the prior's
    assert learned_floor(pol.capacity, fast.factor(pol.capacity)) == 0.5
    assert _cap(pol, reps, 2.0, 0.0, 0.3, slo=knee, stats=fast).factor == pytest.approx(0.5)


def test_the_budget_counts_every_judged_window_starts_included_and_not_stale_ones() -> None:
    pol = policy(capacity={"learn": True, "targetUtilization": 1.0})
    starting = ReplicaCounts(desired=5, ready=4, starting=(StartingReplica("warmup", 10.0),))
    sig = Signals(ttft_histogram=_hist(100.0, 90.0), queue_time_histogram=_hist(100.0, 90.0, 0.2))
    got = _cap(pol, starting, 2.0, 0.0, 0.3, signals=sig).budget  # a start: no SLO-capacity window, but judged
    assert got.judged == pytest.approx(100.0 * 15.0 / 60.0) and got.missed == pytest.approx(got.judged * 0.1)
    assert _cap(pol, starting, 2.0, 0.0, 0.3, signals=sig, learn=False).budget.judged == 0.0


def test_the_capacity_stages_memory_goes_to_the_next_tick_and_back_unchanged() -> None:
    mem = Learned(CapacityStats((0.9, 1.1)), SloCapacity(((30, 8.0, 900.0, 3.0),), 1.0, 12.0),
                  EngineKnee(((30, 8.0, 0.5, 8.0, -1.0),), 2.0, 40.0), 1.2, 100.0, 250.0,
                  SloBudget(10.0, 1.0, 5.0, 0.5), True)
    state = CoreState(last_growth=3.0)
    carried_on = replace(state, **carried(mem))
    assert Learned.of(carried_on) == mem
    assert carried_on.last_growth == 3.0  # the rest of the state is left as it was
    # what a tick's capacity stage leaves is what the next tick's reads back
    pol = policy()
    cp = capacity(pol, Signals(), ReplicaCounts(desired=4, ready=4), Load(2.0, 0.0, 0.0, offered=2.0), mem,
                  learn=True, since_last_tick=15.0, now=1000.0)
    back = Learned.of(replace(state, **carried(cp)))
    assert (back.stats, back.slo, back.engine, back.load_factor, back.settled_since, back.steady_since, back.budget,
            back.beyond_headroom) == (cp.stats, cp.slo, cp.engine, cp.load_factor, cp.settled_since, cp.steady_since,
                                      cp.budget, cp.beyond_headroom)
