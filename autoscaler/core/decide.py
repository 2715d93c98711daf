"""The decision: a pure function of (policy, signals, state, now), composed of named stages.

No I/O and no wall clock: the controller, the simulator and the backtest all call `decide` with their
own clock and sources, so what is measured in simulation is what runs in the cluster.

The stages (autoscaler/core/stages/, one file each, each returning its value and its part of the
explanation), composed in three steps: the candidates (autoscaler/core/candidates.py: readings → demand →
capacity → predictive → hedge → reactive → burst (and its hold) → panic → held queue), the
recommendation (`_recommend`: bounds → the untested floor → stabilize) and the limits (`_limit`: rate
limit → unknown data's hold → bounds' final clamp → surge for replicas leaving). Stale or missing demand
never scales down: the policy's onMissingMetrics says what it leads to. With spec.scaleFromZero, three
paths come first (`_zero`, stages/zero.py): at 0 replicas the gateway's demand, back to 0 after proven
idleness, and a wake in progress sized from what the gateway counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from autoscaler.core.candidates import Candidates, candidates
from autoscaler.core.coldstart import LeadTime, lead_time
from autoscaler.core.floors import floor_at
from autoscaler.core.reason import Reason
from autoscaler.core.signals import ReplicaCounts, Signals, age_within
from autoscaler.core.stages.bounds import Bound, binding, clamp, stuck_unschedulable
from autoscaler.core.stages.capacity import carried, untested_floor
from autoscaler.core.stages.feasibility import feasibility
from autoscaler.core.stages.leaving import surge
from autoscaler.core.stages.missing import missing_target
from autoscaler.core.stages.panic import panic
from autoscaler.core.stages.rate_limit import limit, scale_up
from autoscaler.core.stages.readings import Readings, read
from autoscaler.core.stages.slo_feedback import slo_attainment
from autoscaler.core.stages.stabilize import History, Stabilized, remember_extremes, remember_max, since, stabilize
from autoscaler.core.stages.warm import held, warm
from autoscaler.core.stages.zero import WakeStep, idle, idle_since, resting, serving_floor, wake, wake_step, woken
from autoscaler.core.state import CoreState
from autoscaler.core.waking import Waking
from autoscaler.policy import PolicySpec, ScaleFromZeroSpec
from forecasting import ForecastConfig

__all__ = ["Decision", "DecisionResult", "Reason", "decide", "forecast_config", "slo_attainment",
           "stabilization_window_seconds"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do and why. `desired_replicas` is None when nothing may be written (target unknown)."""

    desired_replicas: int | None
    current_replicas: int | None
    reason: Reason
    binding: str  # the constraint that set the number
    components: dict[str, float]
    lead_time_seconds: float
    forecast_work: float | None
    panic: bool
    metrics_fresh: bool
    unschedulable_stuck: int
    message: str
    # Signals the decision uses that it could not trust this tick (stale, absent, implausible): no scale-down.
    missing_signals: tuple[str, ...] = ()
    # Signals whose fresh value was outside its plausible range (readings.PLAUSIBLE), for the source's error count.
    implausible_signals: tuple[str, ...] = ()
    # Placeholder pods to keep (spec.warmCapacity); 0 when warm capacity is off.
    warm_slots: int = 0
    # Share of recent requests whose TTFT SLO no replica count can meet (stages/feasibility.py); None: unknown.
    slo_infeasible_share: float | None = None
    slo_infeasible_message: str = ""

    def why(self) -> dict[str, str | bool]:
        """Why this count, as the policy's status and a replay's decision log both record it."""
        return {"reason": self.reason.value, "binding": self.binding, "panic": self.panic, "message": self.message}


@dataclass(frozen=True, slots=True)
class DecisionResult:
    decision: Decision
    state: CoreState


# The forecaster's cost grows with the buckets it keeps (a refit over a million 1-s buckets takes
# seconds): no policy keeps more than the default policy's 14 days of 1-minute buckets (the newest).
MAX_HISTORY_BUCKETS = 20_160


def forecast_config(policy: PolicySpec) -> ForecastConfig:
    f = policy.forecast
    return ForecastConfig(
        method=f.method,
        step_seconds=f.step_seconds,
        history_seconds=min(f.history_seconds, MAX_HISTORY_BUCKETS * f.step_seconds),
        refit_every_seconds=f.refit_every_seconds,
    )


def stabilization_window_seconds(policy: PolicySpec, lead: LeadTime) -> float:
    """Long enough that a replica removed now is unlikely to be needed again within one cold start."""
    configured = policy.scale_down.stabilization_window_seconds
    return configured if configured is not None else max(600.0, lead.high_seconds)


def _rate_limit_period(policy: PolicySpec) -> float:
    return max(policy.scale_up.period_seconds, policy.scale_down.period_seconds)


def decide(
    policy: PolicySpec,
    signals: Signals,
    state: CoreState,
    now: float,
    forecast_cfg: ForecastConfig | None = None,
) -> DecisionResult:
    """Desired replicas for one model. Pass `forecast_cfg=forecast_config(policy)` to skip rebuilding it."""
    replicas = signals.replicas
    prev_tick = state.last_tick
    state = replace(state, coldstart=state.coldstart.observe(signals.observations), last_tick=now)
    lead = lead_time(policy.cold_start, state.coldstart, signals.cluster,
                     weights_prestaged=policy.warm_capacity.prestages_weights)
    if (replicas is None or not age_within(replicas.age_seconds, policy.metrics.staleness_seconds)
            or replicas.desired < 0 or not math.isfinite(now)):
        d = Decision(None, None, Reason.TARGET_UNKNOWN, "target", {}, lead.median_seconds, None, False,
                     False, 0, "target replicas (or the clock) unknown, stale or invalid: nothing written")
        return DecisionResult(d, state)
    floor, top = floor_at(policy.replicas, now), policy.replicas.max
    idle_from = None
    if policy.scale_from_zero is not None:
        zero, floor, idle_from = _zero(policy, policy.scale_from_zero, signals, replicas, state, floor, top, lead,
                                       now)
        if zero is not None:
            return zero
    r = read(policy, signals)
    if not r.demand_known:
        return _missing_metrics(policy, state, now, replicas.desired, floor, top, lead, r, signals)
    cfg = forecast_cfg or forecast_config(policy)
    c = candidates(policy, signals, replicas, state, r, lead, cfg, now,
                   now - prev_tick if prev_tick is not None else 0.0)
    rec = _recommend(policy, state, c, r, replicas, lead, floor, top, now)
    out = _limit(policy, c, rec, r, replicas, lead, floor, top, now)
    wm = warm(policy, cfg, c.predictive.forecast, c.demand.offered, c.capacity.usable, state.coldstart,
              signals.cluster, out.desired, trusted=not r.unknown)
    if policy.warm_capacity.enabled:
        out.components.update(wm.explain())
    share, why = feasibility(policy, signals)
    d = Decision(
        desired_replicas=out.desired,
        current_replicas=replicas.desired,
        reason=out.reason,
        binding=rec.bound.binding,
        components=out.components,
        lead_time_seconds=lead.high_seconds,
        forecast_work=c.predictive.forecast_work,
        panic=c.panic.active,
        metrics_fresh=not r.unknown,
        unschedulable_stuck=rec.stuck,
        message=out.message,
        missing_signals=r.unknown,
        implausible_signals=r.implausible,
        slo_infeasible_share=share,
        slo_infeasible_message=why,
        warm_slots=wm.slots,
    )
    return DecisionResult(d, _remember(policy, state, now, out.desired, rec, c, idle_from))


@dataclass(frozen=True, slots=True)
class _Recommendation:
    bound: Bound  # the largest candidate (capped at max) and which one it was
    stuck: int  # replicas unschedulable past the limit
    recommended: int  # what the candidates and the evidence ask for, before stabilization and rate limits
    untested: int  # the fewest replicas that keep each one's load near what was seen to hold the SLO
    stabilized: Stabilized  # the highest sustained recommendation over the window
    decisions: History  # the decisions within the rate limits' period


def _recommend(policy: PolicySpec, state: CoreState, c: Candidates, r: Readings, replicas: ReplicaCounts,
               lead: LeadTime, floor: int, top: int, now: float) -> _Recommendation:
    """Bounds, then stabilization: the largest candidate, raised to what the evidence allows a scale-down to
    leave, and the highest sustained recommendation over the window."""
    current = replicas.desired
    b = binding(c.asks(floor), top)
    # A tick that cannot trust every signal it uses is no evidence for a scale-down: it recommends at
    # least the current count, like the missing-metrics path.
    recommended = b.raw if not r.unknown else min(top, max(b.raw, current))
    # Nor is a load per replica no window has seen hold: a scale-down stops where the evidence ends.
    untested = untested_floor(c.capacity, c.demand.offered, current)
    recommended = max(recommended, untested)
    # The window holds the sustained recommendation (forecast, or the reactive level without one; concurrency;
    # floor); replicas for this tick's queue (reactive drain, hedge) are not held once it has drained, and
    # the replicas for sub-minute bursts are held by their own hold (one cold start after they are up).
    level = c.predictive.replicas if policy.forecast.enabled else c.reactive.replicas
    sustained = recommended if r.unknown else min(recommended, max(level, c.reactive.concurrency, floor))
    st = stabilize(state.recommendations, now, stabilization_window_seconds(policy, lead), policy.interval_seconds,
                   current, recommended, sustained)
    decisions = since(state.decisions, now - _rate_limit_period(policy), now)
    return _Recommendation(b, stuck_unschedulable(policy, replicas), recommended, untested, st, decisions)


@dataclass(frozen=True, slots=True)
class _Limited:
    desired: int
    reason: Reason
    components: dict[str, float]
    message: str


def _limit(policy: PolicySpec, c: Candidates, rec: _Recommendation, r: Readings, replicas: ReplicaCounts,
           lead: LeadTime, floor: int, top: int, now: float) -> _Limited:
    """Rate limits (panic and unschedulable holds included), unknown data's hold, the bounds' final clamp,
    and the surge for replicas leaving: the count to write, why, and the explanation."""
    current, b, st = replicas.desired, rec.bound, rec.stabilized
    components: dict[str, float] = {**c.explain(), "floor": floor, "max": top,
                                    "lead_time_high_s": round(lead.high_seconds, 1)}
    desired, reason = limit(policy, rec.decisions, now, current, b.raw, b.binding, st.value, c.panic.active,
                            rec.stuck)
    if reason is Reason.SCALE_DOWN:
        components.update(st.explain())
    if rec.untested > b.raw:
        components["untested_floor"] = rec.untested
    if r.unknown and desired <= (hold_at := missing_target(policy, current)):
        desired, reason = hold_at, Reason.METRICS_MISSING  # scale up on what is known, never down
    desired, reason = clamp(desired, reason, floor, top)
    sg = surge(desired, rec.recommended, replicas.leaving, top, rec.stuck)
    if sg.added:
        desired, reason = sg.replicas, (Reason.SCALE_UP_LEAVING if sg.replicas > current else reason)
    components.update(sg.explain())
    message = _message(reason, desired, current, b.binding, b.raw, rec.stuck, top, r.unknown, policy,
                       rec.untested) + sg.message(top)
    return _Limited(desired, reason, components, message)


def _remember(policy: PolicySpec, state: CoreState, now: float, desired: int, rec: _Recommendation,
              c: Candidates, idle_from: float | None) -> CoreState:
    """The state the next tick starts from: what each stage wants to remember."""
    dm, cp, pr = c.demand, c.capacity, c.predictive
    return replace(
        state,
        **carried(cp),
        recommendations=rec.stabilized.recommendations,
        decisions=remember_extremes(rec.decisions, now, desired),
        panic_until=c.panic.until,
        forecast=pr.forecast,
        forecast_step_seconds=policy.forecast.step_seconds if pr.forecast is not None else None,
        forecast_seed=None if pr.forecast is not None else state.forecast_seed,
        forecast_cache=pr.cache,
        hedge_cache=c.hedge.cache,
        recent_waiting=dm.recent,
        last_growth=dm.growth,
        held_queue=c.held_queue.active,
        work_per_request=dm.work_per_request,
        burst_held=c.burst_hold.history,
        idle_since=idle_from,
        waking=None,
    )


def _missing_metrics(policy: PolicySpec, state: CoreState, now: float, current: int, floor: int, top: int,
                     lead: LeadTime, r: Readings, signals: Signals) -> DecisionResult:
    """Demand unknown: never scale down; do what the policy says (hold, floor or a fixed fallback). Only
    replicas.max, a bound the user configured, may lower the count, and the decision says so."""
    action = policy.on_missing_metrics.action
    desired = min(top, max(floor, missing_target(policy, current)))
    reason, bind = Reason.METRICS_MISSING, f"onMissingMetrics:{action}"
    if desired < current:
        reason, bind = Reason.SCALE_DOWN_MAX, "max"
    leaving = signals.replicas.leaving if signals.replicas is not None else 0
    need, sg = desired, surge(desired, desired, leaving, top)  # demand unknown: what is held is the need
    if sg.added:
        desired, reason = sg.replicas, (Reason.SCALE_UP_LEAVING if sg.replicas > current else reason)
    unknown = tuple(n for n in ("prompt_tokens_rate", "generation_tokens_rate") if n not in r.unknown) + r.unknown
    recs = remember_max(since(state.recommendations, now - stabilization_window_seconds(policy, lead), now), now,
                        need)
    decisions = remember_extremes(since(state.decisions, now - _rate_limit_period(policy), now), now, desired)
    next_state = replace(state, recommendations=recs, decisions=decisions, recent_waiting=(), held_queue=False,
                         panic_until=panic(policy, None, None, state.panic_until, now).until, idle_since=None,
                         waking=None)
    wm = held(policy, signals.cluster)
    d = Decision(
        desired_replicas=desired,
        current_replicas=current,
        reason=reason,
        binding=bind,
        components={"floor": floor, "max": top, **sg.explain(),
                    **(wm.explain() if policy.warm_capacity.enabled else {})},
        lead_time_seconds=lead.high_seconds,
        forecast_work=None,
        panic=False,
        metrics_fresh=False,
        unschedulable_stuck=0,
        message=_missing_message(action, desired, current, top) + sg.message(top),
        missing_signals=unknown,
        implausible_signals=r.implausible,
        warm_slots=wm.slots,
    )
    return DecisionResult(d, next_state)


def _zero(policy: PolicySpec, z: ScaleFromZeroSpec, signals: Signals, replicas: ReplicaCounts, state: CoreState,
          floor: int, top: int, lead: LeadTime, now: float) -> tuple[DecisionResult | None, int, float | None]:
    """scaleFromZero's paths (stages/zero.py): at 0, the gateway's demand; idle for idleSeconds, back to 0; a
    wake in progress, its own sizing. Else (None, the floor while serving, the idle run carried on)."""
    if replicas.desired == 0 and floor == 0:
        return _at_zero(policy, z, state, now, top, lead, signals), floor, None
    idle_from = idle_since(state.idle_since, idle(z, signals, replicas, policy.metrics.staleness_seconds), now)
    if floor == 0 and idle_from is not None and resting(z, idle_from, now):
        return _to_zero(policy, z, state, now, replicas.desired, top, lead, idle_from, signals), floor, idle_from
    floor = serving_floor(z, floor)
    if state.waking is not None:
        step = wake_step(policy, z, state.waking, signals, replicas, state.capacity, state.load_factor,
                         state.work_per_request, lead.high_seconds, now)
        if step.waking is not None:
            return (_waking(policy, step, state, now, replicas.desired, floor, top, lead, signals, idle_from), floor,
                    idle_from)
    return None, floor, idle_from


def _at_zero(policy: PolicySpec, z: ScaleFromZeroSpec, state: CoreState, now: float, top: int, lead: LeadTime,
             signals: Signals) -> DecisionResult:
    """At 0 replicas with scaleFromZero (and no floor window): the gateway's demand starts the model, its
    absence keeps it at rest; unanswered, the policy's onMissingMetrics decides (hold: stay at 0)."""
    w = wake(z, signals.front_door, policy.metrics.staleness_seconds)
    if w.replicas is None:
        desired = min(top, missing_target(policy, 0))
        reason = Reason.METRICS_MISSING if desired == 0 else Reason.SCALE_UP_FLOOR
        message = (f"{w.message}: onMissingMetrics {policy.on_missing_metrics.action} -> {desired}"
                   " (never scale down on unknown data)")
    else:
        desired = min(top, w.replicas)
        reason = Reason.SCALE_UP_FROM_ZERO if desired > 0 else Reason.STEADY
        message = w.message
    waking = woken(w.front, signals.front_door.age_seconds, now) if w.front is not None and desired > 0 else None
    return _rest(policy, state, now, 0, desired, reason, "scaleFromZero", message, top, lead, signals, w.front,
                 waking)


def _to_zero(policy: PolicySpec, z: ScaleFromZeroSpec, state: CoreState, now: float, current: int, top: int,
             lead: LeadTime, idle_from: float, signals: Signals) -> DecisionResult:
    """Idle for scaleFromZero.idleSeconds: back to 0, past the stabilization window and rate limits, which
    guard against demand coming back, where the idle run has just shown none for longer."""
    message = (f"scale down {current} -> 0: no request at the engines or in front of the model for "
               f"{now - idle_from:.0f} s (scaleFromZero.idleSeconds {z.idle_seconds:g})")
    return _rest(policy, state, now, current, 0, Reason.SCALE_DOWN_TO_ZERO, "scaleFromZero.idleSeconds", message,
                 top, lead, signals, signals.front_door.value)


def _waking(policy: PolicySpec, step: WakeStep, state: CoreState, now: float, current: int, floor: int, top: int,
            lead: LeadTime, signals: Signals, idle_from: float | None) -> DecisionResult:
    """A wake in progress (stages/zero.py): the replicas the gateway's arrivals need, never fewer than now,
    within the scale-up rate limit; the ordinary stages wait until the requests that waited are served."""
    decisions = since(state.decisions, now - _rate_limit_period(policy), now)
    raw = min(top, max(current, floor, step.replicas))
    if raw < current:  # replicas.max lowered under the fleet: the one bound that lowers it here
        desired, reason = raw, Reason.SCALE_DOWN_MAX
    else:
        desired, reason = scale_up(policy, decisions, now, current, raw, "scaleFromZero", False)
        if reason is not Reason.SCALE_UP_RATE_LIMITED:
            reason = Reason.SCALE_UP_FROM_ZERO if desired > current else Reason.STEADY
    message = step.message + (f"; scale up {current} -> {desired}" if desired > current else
                              f"; scale down {current} -> {desired}: replicas.max" if desired < current else
                              f"; hold at {current}")
    return _rest(policy, state, now, current, desired, reason, "scaleFromZero",
                 message, top, lead, signals, signals.front_door.fresh(policy.metrics.staleness_seconds),
                 step.waking, idle_from)


def _rest(policy: PolicySpec, state: CoreState, now: float, current: int, desired: int, reason: Reason,
          bind: str, message: str, top: int, lead: LeadTime, signals: Signals,
          front: float | None, waking: Waking | None = None, idle_from: float | None = None) -> DecisionResult:
    """The decision and next state of the scaleFromZero paths: the windows remember the count, the idle run
    starts again (unless a wake's tick carries it on), and the queue stages' memory is cleared (no engine
    serves across 0, and none of a wake's ticks is read by them)."""
    recs = ((now, desired),)
    decisions = remember_extremes(since(state.decisions, now - _rate_limit_period(policy), now), now, desired)
    next_state = replace(state, recommendations=recs, decisions=decisions, recent_waiting=(), held_queue=False,
                         idle_since=idle_from, panic_until=None, waking=waking)
    wm = held(policy, signals.cluster)
    known = front is not None
    d = Decision(
        desired_replicas=desired,
        current_replicas=current,
        reason=reason,
        binding=bind,
        components={"floor": 0, "max": top, **({"front_door": front} if front is not None else {}),
                    **(wm.explain() if policy.warm_capacity.enabled else {})},
        lead_time_seconds=lead.high_seconds,
        forecast_work=None,
        panic=False,
        metrics_fresh=known,
        unschedulable_stuck=0,
        message=message,
        missing_signals=() if known else ("front_door",),
        warm_slots=wm.slots,
    )
    return DecisionResult(d, next_state)


def _missing_message(action: str, desired: int, current: int, top: int) -> str:
    if desired < current:
        return (f"demand metrics missing or stale; scale down {current} -> {desired}: clamped to replicas.max "
                f"({top}), a configured bound applied even on unknown data")
    return (f"demand metrics missing or stale: {action} -> {desired}"
            + (f" (up from {current}: floor/fallback)" if desired > current else "")
            + " (never scale down on unknown data)"
            + ("; at 0 replicas no engine reports demand: scaleFromZero, a floorSchedule window or a manual scale "
               "brings the first replica back" if desired == 0 else ""))


def _message(reason: Reason, desired: int, current: int, binding: str, raw: int, stuck: int, top: int,
             unknown: tuple[str, ...], policy: PolicySpec, untested: int = 0) -> str:
    if reason is Reason.METRICS_MISSING:
        names = ", ".join(unknown)
        if desired > current:
            return (f"{names} stale, missing or implausible: {policy.on_missing_metrics.action} -> {desired} "
                    f"(up from {current}: floor/fallback; never scale down on unknown data)")
        return f"hold at {current}: {names} stale, missing or implausible (never scale down on unknown data)"
    if reason is Reason.SCALE_DOWN_MAX:
        return f"scale down {current} -> {desired}: clamped to replicas.max ({top})"
    suffix = f"; {', '.join(unknown)} stale, missing or implausible: no scale-down" if unknown else ""
    if reason is Reason.UNSCHEDULABLE:
        return f"{stuck} replica(s) unschedulable past the limit; holding at {current} instead of {raw}" + suffix
    if reason is Reason.SCALE_UP_RATE_LIMITED:
        return f"scale up {current} -> {desired} (wanted {raw} by {binding}; rate-limited)" + suffix
    if desired > current:
        return f"scale up {current} -> {desired} ({binding})" + suffix
    if desired < current:
        return f"scale down {current} -> {desired} (stabilized recommendation; {binding} wants {raw})"
    if reason is Reason.STABILIZING and untested >= current > raw:
        return (f"hold at {current}: {binding} wants {raw}, but no fewer than {untested} keep each replica's load "
                "near what was seen to hold the SLO (no knee learned yet)")
    if reason is Reason.STABILIZING:
        return f"hold at {current}: {binding} wants {raw}, waiting out the stabilization window"
    if reason is Reason.PANIC_HOLD:
        return f"hold at {current}: SLO breached recently (panic), no scale-down"
    return f"steady at {current} ({binding})"
