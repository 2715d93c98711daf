"""Capacity: the work one replica should carry this tick.

The capacity at the SLO (autoscaler/core/slo_capacity.py) is learned at every load level from clean
windows: fresh metrics, nothing starting, the fleet at its desired size for a whole rate window and no
queue left over from before it got there (a window that includes a start, a stale scrape or the drain of
an earlier backlog says nothing about what a settled replica can carry). A window
counts as missed when the SLO share fell short *and* requests queued: misses while nothing queues (an
SLO prefill alone cannot meet) say nothing about load. The planned load is that capacity times the target
utilization, which the SLO feedback lowers after misses and raises while the SLO holds with margin
and the fleet carries its plan (not while it is held above it);
never past the capacity at the SLO, nor past 95% of the throughput measured while a real queue stood
(through the whole rate window the service was read over: decision change X).
Until a knee is found, the prior's share of the SLO (PRIOR_SLO_SHARE) is lifted to ENGINE_KNEE_LIFT past
where the engine's own evidence puts the knee when that is higher (autoscaler/core/engine_knee.py: the
batch's growth towards saturation and the SLO's latency quantile, read at every load; decision changes V
and W), or past the fits' reach when they put the knee beyond it (decision change AE).
With no knee found yet, how far past the highest load seen to hold it plans depends on the whole SLO's
error budget over hours (autoscaler/core/slo_budget.py), and no scale-down takes a replica's load further
than that past it (`untested_floor`): a prior may say fewer replicas would do, the evidence has not.
A knee the misses found (or their trend) is spread to the current demand: the load per replica that keeps
the spare capacity the fleet had where the misses were seen (`spread_knee`, decision change Z); under
ENGINE_KNEE_LIFT past the engine's knee it is then planned past by the exploration (`measured_knee`, decision
changes Y, Y2 and AC);
under half the engine's knee it is no knee (decision change AB). A bin over the budget is a knee only once
its misses came in two episodes; one burst's misses count in the trend only (slo_capacity.py, decision
change AD).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autoscaler.core.capacity import MIN_SAMPLES as MIN_SATURATED_SAMPLES
from autoscaler.core.capacity import CapacityStats, real_queue
from autoscaler.core.engine_knee import EngineKnee
from autoscaler.core.signals import ReplicaCounts, Signals
from autoscaler.core.slo_budget import SloBudget
from autoscaler.core.slo_capacity import EXPLORE, SloCapacity, plan_at, spread_knee
from autoscaler.core.stages.sizing import replicas_for
from autoscaler.core.stages.slo_feedback import load_factor, slo_attainment, within_headroom
from autoscaler.core.state import CoreState
from autoscaler.policy import CapacitySpec, PolicySpec

MAX_PLANNED_UTILIZATION = 0.95
SATURATED_KV = 0.95
# Until measured, a replica is assumed to hold the SLO up to this share of its prior throughput (or up to
# ENGINE_KNEE_LIFT past the engine's knee, when that is higher: engine_knee.py).
PRIOR_SLO_SHARE = 0.8
# The engine's knee is where a steady load starts to queue (or its latency quantile reaches the SLO); a
# TTFT SLO still holds a little past where the queue begins. Left to the misses with a prior that is right,
# the learner settles 5-17% above that knee on diurnal, so an understated prior is lifted to about the same
# place: 15% past it (docs/benchmarks.md, decision change W: 10% and 20% measured worse over the replays).
ENGINE_KNEE_LIFT = 1.15
# A window is clean once the fleet has been steady this long: the rate window (60 s) plus a scrape.
STEADY_SECONDS = 75.0
# Queue time that counts as queueing, as a share of the TTFT SLO (or the queue-time SLO itself).
QUEUED_SHARE_OF_TTFT = 0.1
# A margin says the plan was cautious only while the fleet carries its plan: at least this share of the
# planned load per replica. Below it the fleet is held above its plan (the scale-down window after a peak,
# a floor, replicas.min) and its margin says nothing about how hot a replica may run (docs/benchmarks.md,
# decision change K).
AT_PLAN_SHARE = 0.6
# A knee the misses found (or their trend) under this share of the engine's knee is no knee of the replica:
# at half of where a steady load starts to queue, the engine's latency is a small part of the SLO, and the
# misses came from what the load bins cannot tell apart (a traffic gap, a backlog a start left). The plan
# treats it as no knee found (docs/benchmarks.md, decision change AB: a third measured the same or worse).
FOUND_UNDER_ENGINE = 0.5
NO_ENGINE_EVIDENCE = EngineKnee()


@dataclass(frozen=True, slots=True)
class Capacity:
    stats: CapacityStats  # per-replica throughput samples taken while a real queue stood
    slo: SloCapacity  # windows and misses per load bin
    factor: float  # capacity at the SLO as a factor of the prior
    throughput: float  # what a ready replica drains a queue at (measured under a real queue), factor of the prior
    load_factor: float  # SLO feedback (>1: plan less load per replica)
    usable: float  # work one replica should carry
    settled_since: float | None  # since when nothing has been starting and no queue waited
    steady_since: float | None  # since when nothing has been starting and the fleet was at its desired size
    budget: SloBudget  # every window's requests and misses, faded: may the capacity explore upward?
    explore: float  # how far past the highest load seen to hold the capacity was planned
    # With no knee found yet: the most load per replica a scale-down may leave, `explore` past the highest
    # load seen to hold (see `untested_floor`); None: no bound (a knee found, nothing seen yet, not learning).
    untested_limit: float | None = None
    # Since the fleet last settled, some tick's load per ready replica was past what the SLO feedback's whole
    # range could have covered: its misses while starting do not raise the load factor (decision change O).
    beyond_headroom: bool = False
    engine: EngineKnee = field(default_factory=EngineKnee)  # the engine's batch and latency per load bin
    engine_knee: float | None = None  # where they say the SLO stops holding (None: too little evidence)
    # The knee the misses found (SloCapacity.knee), before `measured_knee` raises it; None: none found yet.
    slo_knee: float | None = None
    # With no knee found, where the misses' trend puts it (SloCapacity.trend_knee), before `measured_knee`
    # raises it; None: no trend fitted.
    slo_trend: float | None = None
    # The lowest bin over the budget whose misses came in one episode so far (SloCapacity.pending): a second
    # episode makes it the knee (decision change AD); None: none.
    slo_pending: float | None = None
    # What lifts the prior's share: `engine_knee`, or the fits' reach when they put the knee past it
    # (EngineKnee.lift, decision change AE); None: no fit.
    engine_lift: float | None = None
    # The SLO's error budget burn over hours and over the last minutes (SloBudget.burn, .recent_burn: 1 = at
    # the budget's rate), which decide whether the load factor rises, holds or relaxes (stages/slo_feedback.py);
    # None: too few requests judged yet.
    burn: float | None = None
    recent_burn: float | None = None

    def explain(self) -> dict[str, float]:
        # miss_fleet: the mean ready replicas of the windows that missed, whose spare `spread_knee` keeps.
        # *_refused: 1 when that knee lies under FOUND_UNDER_ENGINE of the engine's and the plan ignores it.
        # engine_knee_at_reach: the fits put the knee past their reach, and the prior's share is lifted as if it
        # lay there (decision change AE).
        at_reach = self.engine_lift if self.engine_knee is None else None
        known = (("engine_knee", self.engine_knee), ("engine_knee_at_reach", at_reach), ("slo_knee", self.slo_knee),
                 ("slo_trend", self.slo_trend), ("slo_knee_pending", self.slo_pending),
                 ("miss_fleet", self.slo.miss_fleet()), ("slo_burn", self.burn),
                 ("slo_recent_burn", self.recent_burn))
        refused = (("slo_knee_refused", self.slo_knee), ("slo_trend_refused", self.slo_trend))
        return {"capacity_factor": round(self.factor, 4), "load_factor": round(self.load_factor, 4),
                "capacity_explore": round(self.explore, 4), **{k: round(v, 4) for k, v in known if v is not None},
                **{k: 1.0 for k, found in refused if refused_knee(found, self.engine_knee)}}


def queued(policy: PolicySpec, signals: Signals, waiting: float, stale: float) -> bool:
    """Whether requests queued in this window: more than the SLO's miss budget waited noticeably."""
    h = signals.queue_time_histogram
    slo = policy.slo
    limit = slo.queue_time_seconds if slo.queue_time_seconds is not None else QUEUED_SHARE_OF_TTFT * (
        slo.ttft_seconds or 0.0)
    if h is not None and h.age_seconds <= stale and h.total > 0 and limit > 0:
        share = h.share_within(limit)
        return share is not None and share < slo.quantile
    return waiting >= 1.0


def judged(policy: PolicySpec, signals: Signals) -> float:
    """Requests the window's SLO share was taken over (the larger histogram's count)."""
    hists = (signals.ttft_histogram if policy.slo.ttft_seconds is not None else None,
             signals.queue_time_histogram if policy.slo.queue_time_seconds is not None else None)
    return max((h.total for h in hists if h is not None), default=0.0)


def latency_ratio(policy: PolicySpec, signals: Signals) -> float | None:
    """The window's latency at the SLO's quantile as a share of the SLO (the larger over TTFT and queue
    time where both are set); None where no histogram says."""
    slo, out = policy.slo, None
    for h, limit in ((signals.ttft_histogram, slo.ttft_seconds), (signals.queue_time_histogram,
                                                                  slo.queue_time_seconds)):
        if h is None or limit is None or not h.total >= 2.0 / (1.0 - slo.quantile):
            continue
        v = h.quantile(slo.quantile)
        if v is not None:
            out = v / limit if out is None else max(out, v / limit)
    return out


def _since(steady: bool, previous: float | None, now: float) -> float | None:
    # A start in the future means the clock went backwards: from now on.
    if not steady:
        return None
    return min(previous, now) if previous is not None else now


def learned_floor(cap: CapacitySpec, throughput: float) -> float:
    """The lowest capacity at the SLO the learner may plan with, as a factor of the prior: `learnMinFactor`
    of the prior, or of what a replica was measured to drain under a real queue (`throughput`,
    `CapacityStats.factor`: 1 until measured) when that is slower.

    The floor keeps a knee found in noise from collapsing the plan, and it is relative to the best evidence
    of a replica's speed: a prior that overstates the replica (a faster GPU's figure, another token mix)
    would otherwise pin the plan above the SLO's knee (priors ×1.3 on servegen-large: the knee is 0.42 of
    that prior, under a 0.5 floor; docs/benchmarks.md, decision change H)."""
    return cap.learn_min_factor * min(1.0, throughput)


@dataclass(frozen=True, slots=True)
class Load:
    """What this tick measured of the fleet's load (stages/demand.py, stages/readings.py)."""
    served: float  # work being served (replica-equivalents at the prior)
    waiting: float  # sequences waiting
    backlog: float  # work waiting in the queue
    offered: float = 0.0  # served + the queue's change over the rate window
    kv: float | None = None  # KV-cache use, 0-1
    running: float | None = None  # sequences running, summed over the fleet
    # A backlog the engines that took it hold (stages/held_queue.py): their service is no capacity.
    queue_held: bool = False
    # A queue stood through the whole window the service was read over (stages/demand.py: queue_stood); until
    # one is said to have, no service is a throughput sample.
    queue_stood: bool = False


@dataclass(frozen=True, slots=True)
class Learned:
    """What the capacity stage carries from one tick to the next (CoreState's fields of the same meaning)."""
    stats: CapacityStats = field(default_factory=CapacityStats)
    slo: SloCapacity = field(default_factory=SloCapacity)
    engine: EngineKnee = NO_ENGINE_EVIDENCE
    load_factor: float = 1.0
    settled_since: float | None = None
    steady_since: float | None = None
    budget: SloBudget = field(default_factory=SloBudget)
    beyond_headroom: bool = False

    @classmethod
    def of(cls, state: CoreState) -> Learned:
        return cls(state.capacity, state.slo_capacity, state.engine_knee, state.load_factor, state.settled_since,
                   state.steady_since, state.slo_budget, state.beyond_headroom)


def carried(m: Learned | Capacity) -> dict[str, Any]:
    """The CoreState fields that carry the capacity stage's memory to the next tick (the inverse of
    `Learned.of`), from a `Learned` or from a tick's `Capacity`, which name them alike."""
    return {"capacity": m.stats, "slo_capacity": m.slo, "engine_knee": m.engine, "load_factor": m.load_factor,
            "settled_since": m.settled_since, "steady_since": m.steady_since, "slo_budget": m.budget,
            "beyond_headroom": m.beyond_headroom}


def capacity(policy: PolicySpec, signals: Signals, replicas: ReplicaCounts, load: Load, previous: Learned, *,
             learn: bool, since_last_tick: float, now: float) -> Capacity:
    """This tick's capacity: what the learner saw (`_observe`), then the plan it makes of it (`_plan`).
    `learn`: the tick's metrics are trusted (nothing stale or missing), so the learner may take a sample."""
    return _plan(policy, load, previous, _observe(policy, signals, replicas, load, previous, learn,
                                                  since_last_tick, now), replicas.ready, since_last_tick, now)


@dataclass(frozen=True, slots=True)
class _Observed:
    stats: CapacityStats
    slo: SloCapacity
    engine: EngineKnee
    settled_since: float | None
    steady_since: float | None
    budget: SloBudget
    attained: float | None  # the window's SLO share (None: not judged)


def _observe(policy: PolicySpec, signals: Signals, replicas: ReplicaCounts, load: Load, previous: Learned,
             learn: bool, since_last_tick: float, now: float) -> _Observed:
    """The learner's memory after this tick's window: throughput samples, the steady and settled clocks, the
    SLO's error budget, and the SLO's and the engine's evidence per load bin."""
    cap, stale, ready, kv = policy.capacity, policy.metrics.staleness_seconds, replicas.ready, load.kv
    saturated = real_queue(load.waiting, ready) or (kv is not None and kv >= SATURATED_KV)
    # Throughput equals capacity only under a queue that makes requests wait for capacity: one holding at
    # least the SLO's queue budget of the fleet's service, and standing through the whole window the service
    # was read over (`queue_stood`, stages/demand.py). A long `waiting` count alone is no such queue (vLLM
    # counts a request as waiting until its first step; at several requests a second per replica a few are
    # always waiting), nor is one scrape's burst, and served/ready beside them is a utilisation, not a capacity.
    throughput_bound = (kv is not None and kv >= SATURATED_KV) or (
        saturated and load.queue_stood and load.backlog >= policy.slo.queue_budget_seconds * load.served)
    # A backlog the engines that took it hold keeps most replicas idle: their service is no capacity.
    stats = (previous.stats.observe(cap, load.served, ready) if throughput_bound and learn and not load.queue_held
             else previous.stats)
    # A queue left from before the fleet reached its size drains through the next windows and its requests
    # miss at whatever load the grown fleet carries: the steady clock starts only once no such queue stands.
    steady = not replicas.starting and ready >= replicas.desired > 0
    steady_since = _since(steady and (previous.steady_since is not None or not saturated), previous.steady_since,
                          now)
    # Settled: nothing starting and no request waiting. Summed over a loaded fleet some request waits at nearly
    # every scrape, so this seldom holds (the SLO feedback's full-pace response seldom runs, an episode past its
    # reach seldom ends); "no real queue" instead was measured and not kept (docs/benchmarks.md, "Tried after AE").
    settled_since = _since(not replicas.starting and ready >= replicas.desired and load.waiting < 1.0,
                           previous.settled_since, now)
    attained = slo_attainment(policy, signals, stale)
    # A tick with stale metrics judges nothing; a long gap between ticks fades as if it had judged nothing.
    budget = previous.budget.observe(attained if learn else None, judged(policy, signals),
                                     min(since_last_tick, 4 * policy.interval_seconds), signals.rate_window())
    slo, engine = previous.slo, previous.engine
    if (cap.learn and learn and attained is not None and ready > 0 and steady_since is not None
            and now - steady_since >= STEADY_SECONDS):
        requests = judged(policy, signals)
        missed = (1.0 - attained) * requests if queued(policy, signals, load.waiting, stale) else 0.0
        slo = slo.observe(load.served / ready, requests, missed, ready, now)
        engine = engine.observe(load.served / ready, load.running / ready if load.running is not None else None,
                                latency_ratio(policy, signals), kv)
    return _Observed(stats, slo, engine, settled_since, steady_since, budget, attained)


def _plan(policy: PolicySpec, load: Load, previous: Learned, seen: _Observed, ready: int, since_last_tick: float,
          now: float) -> Capacity:
    """The capacity at the SLO the plan uses (a factor of the prior, from the knees found, the engine's
    evidence and the throughput measured), the SLO feedback's load factor, and the work per replica."""
    cap, stats, slo, budget = policy.capacity, seen.stats, seen.slo, seen.budget
    knee, lift = seen.engine.readings(cap.max_concurrency) if cap.learn else (None, None)
    explore = budget.explore(policy.slo.quantile, EXPLORE)
    throughput = stats.factor(cap)
    over, held, trend = slo.limits(policy.slo.quantile)
    if cap.learn:
        fleet = slo.miss_fleet()
        factor = plan_at(planned_knee(over, fleet, knee, load.offered, explore), held, lifted_share(lift),
                         learned_floor(cap, throughput), cap.learn_max_factor, explore,
                         planned_knee(trend, fleet, knee, load.offered, explore))
        if len(stats.samples) >= MIN_SATURATED_SAMPLES:
            factor = min(factor, MAX_PLANNED_UTILIZATION * throughput)
    else:
        factor = 1.0
    planned = factor * planned_share(cap, previous.load_factor)
    at_plan = ready > 0 and load.served / ready >= AT_PLAN_SHARE * planned
    settled_since = seen.settled_since
    # An episode (from the fleet leaving its settled state to settling again) is past the feedback's reach
    # once one of its ticks was: the backlog of a step drains through the replicas that come up after it,
    # and those misses are the step's too.
    beyond = settled_since is None and (
        previous.beyond_headroom or not within_headroom(policy, load.offered, ready, previous.load_factor, factor))
    burn, recent_burn = budget.burn(policy.slo.quantile), budget.recent_burn(policy.slo.quantile)
    lf = load_factor(policy, seen.attained if cap.slo_feedback.enabled else None, previous.load_factor,
                     since_last_tick, now - settled_since if settled_since is not None else 0.0, burn, at_plan,
                     coverable=not beyond, recent_burn=recent_burn)
    if not cap.learn:  # the prior as stated: planned at the target utilization, never past 95% of it
        return Capacity(stats, slo, 1.0, 1.0, lf, planned_share(cap, lf), settled_since, seen.steady_since, budget,
                        0.0, engine=seen.engine, burn=burn, recent_burn=recent_burn)
    usable = factor * planned_share(cap, lf)
    untested = held * (1.0 + explore) if over is None and held is not None else None
    return Capacity(stats, slo, factor, throughput, lf, usable, settled_since, seen.steady_since, budget, explore,
                    untested, beyond, seen.engine, knee, over, trend, slo.pending(policy.slo.quantile), lift, burn,
                    recent_burn)


def settled_knee(engine_knee: float | None) -> float | None:
    """Where a learner with a right prior settles, by the engine's evidence: ENGINE_KNEE_LIFT past its knee.
    The one place the plan reads the engine's knee as a capacity (`lifted_share`, `measured_knee`)."""
    return None if engine_knee is None else ENGINE_KNEE_LIFT * engine_knee


def lifted_share(knee: float | None) -> float:
    """The capacity at the SLO planned before any knee is found, as a factor of the prior: the prior's share,
    or ENGINE_KNEE_LIFT past the engine's knee when that is higher (decision changes V and W). `knee` is
    `EngineKnee.lift`: past the fits' reach, the reach (decision change AE). A knee the misses found is
    explored, spread and refused only against one within the reach (`planned_knee`): read at the reach there,
    a replay with every prior ×1.3 explored a trend of misses past the replica's knee in its first hour and
    paid 15% more for the day it learned from that (docs/benchmarks.md, "Decision change AE")."""
    settled = settled_knee(knee)
    return PRIOR_SLO_SHARE if settled is None else max(PRIOR_SLO_SHARE, settled)


def measured_knee(over: float | None, engine_knee: float | None, explore: float) -> float | None:
    """The knee the misses found (`over`: a bin over the budget, or before one is, their trend), raised towards
    ENGINE_KNEE_LIFT past the engine's knee (where a right prior's learner settles, and where `lifted_share`
    lifts an understated prior) when that is higher, by at most the hours' error budget's exploration
    (`explore`; none while it is spent past half): decision changes Y, Y2 (the trend) and AC (the lift).

    A window's misses are charged to the load its replicas served. In an overload they served less than
    arrived (a scale-down the prior allowed, a burst), so the misses land in a bin under the load that broke
    the SLO. That bin is then over the budget, the plan stays under it, and no later window tests it again:
    on diurnal with the priors ×1.3 the fleet stepped 9 → 7 at minute 49, the bin at 0.434 went over, and the
    plan held 0.434 all day while the engine's knee said 0.49-0.50 (GPU-hours 1.16× the right priors').
    The engine's knee is where a steady load starts to queue; misses under it came from a transient. Raised
    all the way to it, four bursty ServeGen days fell under 99% at priors ×1.3 (their knee is under the
    steady fit's), so the raise is only the exploration's (+10%), which kept every replay. A trend pins the plan
    the same way: fitted in hour 1 of servegen-large-cold's day at 0.594 of the prior, it capped the whole
    day (0.561 by hour 18) while the engine's knee said 0.62-0.77 (docs/benchmarks.md, decision change Y2).
    Stopped at the engine's knee itself, a prior 30% high planned diurnal's day at that knee, 7% under where
    the right prior's learner settled (0.685 of the prior against the knee's 0.64): decision change AC."""
    ceiling = settled_knee(engine_knee)
    if over is None or ceiling is None or not ceiling > over:
        return over
    return min(ceiling, over * (1.0 + max(0.0, explore)))


def refused_knee(found: float | None, engine_knee: float | None) -> bool:
    """Whether a knee the misses found lies under FOUND_UNDER_ENGINE of the engine's (no knee of the replica)."""
    return found is not None and engine_knee is not None and found < FOUND_UNDER_ENGINE * engine_knee


def planned_knee(found: float | None, fleet: float | None, engine_knee: float | None, offered: float,
                 explore: float) -> float | None:
    """A knee the misses found (a bin over the budget, or their trend), as the plan uses it: spread to the
    demand `offered` by the spare capacity the fleet it was seen on kept (`spread_knee`, decision change Z),
    then explored past towards the engine's knee (`measured_knee`, decision changes Y and Y2). Under
    FOUND_UNDER_ENGINE of the engine's knee it is no knee: the plan goes on as if none was found.

    A knee charged to hours of traffic gaps stays in the bins a whole day: servegen-mid's carried day 6
    (priors ×1.3) entered with a knee at 0.101 of the prior, five times under the engine's 0.51, and held
    30-34 replicas where the throughput cap planned 16-19 (711.54 → 429.85 GPU-h, decision change AB)."""
    if refused_knee(found, engine_knee):
        return None
    return measured_knee(spread_knee(found, fleet, engine_knee, offered), engine_knee, explore)


def planned_share(cap: CapacitySpec, lf: float) -> float:
    """The share of the capacity at the SLO each replica is planned to carry under load factor `lf`."""
    if not cap.learn:
        return min(MAX_PLANNED_UTILIZATION, cap.target_utilization / lf)
    return min(1.0, cap.target_utilization / lf)


def untested_floor(cap: Capacity, offered: float, current: int) -> int:
    """The fewest replicas a scale-down may leave (at most `current`; 0: no bound): with no knee found yet,
    enough that each carries no more than `explore` past the highest load seen to hold the SLO
    (`Capacity.untested_limit`).

    Until a knee is found the plan trusts the prior, and on a small fleet one replica fewer is a large step
    in load (4 → 3 is a third more per replica), far past anything measured. On flash-crowd's steady
    30 req/s the prior said 3 replicas would do, the fleet stepped down 6 → 3 with the SLO holding at each
    step, and the third step broke it: two minutes of 99% misses before the knee was learned
    (docs/benchmarks.md, decision change J). So a step down may take each replica only as far past the
    evidence as the plan may explore (+10%, none or −10% by the hours' error budget); the learner then
    sees the new load hold before the next step. Scale-ups are never bounded by it."""
    if cap.untested_limit is None or current <= 0 or not offered > 0:
        return 0
    return min(current, replicas_for(offered, cap.untested_limit))
