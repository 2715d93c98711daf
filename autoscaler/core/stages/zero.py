"""Scale from zero and back to it (spec.scaleFromZero).

At 0 replicas no engine reports demand; the gateway or activator in front of the model does (the policy's
`scaleFromZero.query`, read into `Signals.front_door`). Above the threshold the model is started; at or
under it the model rests; unanswered, neither (the policy's onMissingMetrics says what unknown leads to,
as everywhere). A serving model goes back to 0 only on proof of idleness: every engine fresh and reporting
no request in its rate window, none running and none waiting, the gateway at or under the threshold, and
nothing starting, unbroken for `idleSeconds`. Any tick without that proof (a busy one or an unknown one)
restarts the count, and until then the model keeps at least one replica.

**Waking.** From the wake until the requests that waited out the cold start are served, the engines' own
signals say little of demand: there are none until the first replica is ready, and then that replica takes
the gateway's whole backlog at once, which reads as a burst (a queue, a spike of finished requests, TTFT
misses no replica count could have prevented). Read as one, it ordered several times the replicas the
traffic needed and held them through a panic and a stabilization window. So while waking, the fleet is
sized from what the gateway counted while nothing was served (how fast its count grew from the wake on,
between the times the counts were taken: the arrival rate) at the work per request and the planned load
per replica the policy learned before it went to rest, plus the replicas the held backlog keeps busy (the
first replicas take a cold start of arrivals and serve them at full pace for about as long, while any
replica with room takes the new ones: the arrivals need replicas of their own), never below
`scaleFromZero.replicas` and never down. The wake's first tick has one count and no rate: it starts
`scaleFromZero.replicas`. The wake ends one rate window after the engines' queue first stood empty (no
window then holds a request that waited for the cold start), or one high-quantile cold start after the
first replica was ready, whichever comes first, or when no replica is ready two high-quantile cold starts
after the wake (a replica stuck Pending is the ordinary decision's to report). The ordinary decision
resumes from there, its forecaster, capacity learner and SLO budget fed nothing from the wake.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.capacity import CapacityStats
from autoscaler.core.signals import Measured, ReplicaCounts, Signals
from autoscaler.core.stages.capacity import planned_share
from autoscaler.core.stages.demand import work_per_request
from autoscaler.core.stages.sizing import replicas_for
from autoscaler.core.waking import Waking
from autoscaler.policy import PolicySpec, ScaleFromZeroSpec

# What the engines must all report, fresh and zero, for a tick to count as idle: every demand signal.
_IDLE_SIGNALS = ("request_rate", "prompt_tokens_rate", "generation_tokens_rate", "running", "waiting")


@dataclass(frozen=True, slots=True)
class Wake:
    """At 0 replicas: what the gateway says. `replicas` is scaleFromZero.replicas when its demand is above
    the threshold, 0 when it is not, None when it did not answer (or answered too late)."""

    replicas: int | None
    front: float | None
    message: str


def wake(z: ScaleFromZeroSpec, front: Measured, staleness_seconds: float) -> Wake:
    v = front.fresh(staleness_seconds)
    if v is None:
        why = "stale" if front.stale(staleness_seconds) else "unanswered"
        return Wake(None, None, f"at 0 replicas and scaleFromZero.query {why}: no demand known")
    if v > z.threshold:
        return Wake(z.replicas, v, f"scale up 0 -> {z.replicas}: {v:g} request(s) in front of the model, above "
                                   f"scaleFromZero.threshold ({z.threshold:g})")
    return Wake(0, v, f"resting at 0: {v:g} request(s) in front of the model, at or under scaleFromZero.threshold "
                      f"({z.threshold:g})")


def idle(z: ScaleFromZeroSpec, signals: Signals, replicas: ReplicaCounts, staleness_seconds: float) -> bool:
    """Whether this tick proves the model idle: nothing starting, every engine signal it needs fresh and 0,
    and the gateway fresh and at or under the threshold. Unknown is never idle."""
    if replicas.starting or replicas.ready < replicas.desired:
        return False
    for name in _IDLE_SIGNALS:
        if getattr(signals, name).fresh(staleness_seconds) != 0.0:
            return False
    front = signals.front_door.fresh(staleness_seconds)
    return front is not None and front <= z.threshold


def idle_since(previous: float | None, is_idle: bool, now: float) -> float | None:
    """The start of the unbroken idle run this tick extends, or None when this tick breaks it."""
    if not is_idle:
        return None
    return previous if previous is not None and previous <= now else now


def resting(z: ScaleFromZeroSpec, since: float, now: float) -> bool:
    """Idle since `since` for scaleFromZero.idleSeconds: the model may go back to 0."""
    return now - since >= z.idle_seconds


def serving_floor(z: ScaleFromZeroSpec | None, floor: int) -> int:
    """The floor while the model serves: with scaleFromZero, at least one replica until idleness is proven
    (the way back to 0 is `resting`, not a scale-down the demand stages ask for)."""
    return max(floor, 1) if z is not None else floor


def woken(front: float, front_age: float, now: float) -> Waking:
    """The wake's start: the gateway's count and when it was taken."""
    return Waking(now - front_age, front)


def _grown(w: Waking, front: float, front_age: float, now: float) -> Waking:
    """The wake with the arrival rate the count's growth since the wake's first count implies (nothing is
    served yet); unchanged while the two counts are less than a second apart (the same scrape read again)."""
    taken = now - front_age
    if taken - w.at < 1.0:
        return w
    return Waking(w.at, w.count, max(0.0, front - w.count) / (taken - w.at), w.ready_at, w.drained_at)


@dataclass(frozen=True, slots=True)
class WakeStep:
    waking: Waking | None  # None: the wake is over, the ordinary decision takes this tick
    replicas: int  # what the arrivals the gateway counted need (at least scaleFromZero.replicas)
    message: str


def wake_step(policy: PolicySpec, z: ScaleFromZeroSpec, w: Waking, signals: Signals, replicas: ReplicaCounts,
              stats: CapacityStats, load_factor: float, wpr: float | None, lead_high_seconds: float,
              now: float) -> WakeStep:
    """One tick of a wake (see the module docstring)."""
    staleness = policy.metrics.staleness_seconds
    front = signals.front_door.fresh(staleness)
    if replicas.ready <= 0:
        if now - w.at >= 2 * lead_high_seconds:  # no replica up in two cold starts: stuck, not waking
            return WakeStep(None, 0, "")
        if front is not None:  # nothing served yet: the count grows by every arrival
            w = _grown(w, front, signals.front_door.age_seconds, now)
    else:
        ready_at = w.ready_at if w.ready_at is not None else now
        waiting = signals.waiting.fresh(staleness)
        drained_at = w.drained_at if w.drained_at is not None else (
            now if waiting is not None and waiting < 1.0 else None)
        w = Waking(w.at, w.count, w.rate, ready_at, drained_at)
        if ((drained_at is not None and now - drained_at >= signals.rate_window())
                or now - ready_at >= lead_high_seconds):
            return WakeStep(None, 0, "")
    if w.rate is None:
        return WakeStep(w, z.replicas, f"waking: {w.count:g} request(s) at the gateway, their rate not known yet "
                                       f"(one count): {z.replicas} replica(s)")
    cap = policy.capacity
    work = w.rate * (wpr if wpr is not None else work_per_request(cap, None, 0.0, None))
    share = planned_share(cap, load_factor)
    # The backlog (a cold start of arrivals) keeps the replicas that take it busy at full pace for about a
    # cold start: work/factor replicas' worth, on top of the arrivals' work/usable.
    need = max(z.replicas, replicas_for(work * (1.0 + share), stats.factor(cap) * share))
    return WakeStep(w, need, f"waking: {w.rate:.3g} request(s)/s counted at the gateway while nothing was "
                             f"served need {need} replica(s), the backlog it held included")
