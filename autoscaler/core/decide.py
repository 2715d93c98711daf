"""The decision: a pure function of (policy, signals, state, now), composed of named stages.

No I/O and no wall clock: the controller, the simulator and the backtest all call `decide` with their
own clock and sources, so what is measured in simulation is what runs in the cluster.

The stages (autoscaler/core/stages/, one file each, each returning its value and its part of the
explanation): readings → demand → capacity → predictive → reactive → panic → bounds → stabilize →
rate limit → bounds' final clamp. Stale or missing demand never scales down: the policy's
onMissingMetrics says what it leads to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from autoscaler.core.coldstart import LeadTime, lead_time
from autoscaler.core.floors import floor_at
from autoscaler.core.reason import Reason
from autoscaler.core.signals import Signals
from autoscaler.core.stages.bounds import binding, clamp, stuck_unschedulable
from autoscaler.core.stages.capacity import capacity
from autoscaler.core.stages.demand import demand
from autoscaler.core.stages.missing import missing_target
from autoscaler.core.stages.panic import panic
from autoscaler.core.stages.predictive import predictive
from autoscaler.core.stages.rate_limit import scale_down, scale_up
from autoscaler.core.stages.reactive import reactive, ready_in
from autoscaler.core.stages.readings import read
from autoscaler.core.stages.slo_feedback import slo_attainment
from autoscaler.core.stages.stabilize import since, stabilize
from autoscaler.core.state import CoreState
from autoscaler.policy import PolicySpec
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


@dataclass(frozen=True, slots=True)
class DecisionResult:
    decision: Decision
    state: CoreState


def forecast_config(policy: PolicySpec) -> ForecastConfig:
    f = policy.forecast
    return ForecastConfig(
        method=f.method,
        step_seconds=f.step_seconds,
        history_seconds=f.history_seconds,
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
    stale = policy.metrics.staleness_seconds
    replicas = signals.replicas
    prev_tick = state.last_tick
    state = replace(state, coldstart=state.coldstart.observe(signals.observations), last_tick=now)
    lead = lead_time(policy.cold_start, state.coldstart, signals.cluster)
    floor, top = floor_at(policy.replicas, now), policy.replicas.max
    if replicas is None or replicas.age_seconds > stale:
        d = Decision(None, None, Reason.TARGET_UNKNOWN, "target", {}, lead.median_seconds, None, False,
                     False, 0, "target replicas unknown or stale: nothing written")
        return DecisionResult(d, state)
    current = replicas.desired
    r = read(signals, stale)
    if not r.demand_known:
        return _missing_metrics(policy, state, now, current, floor, top, lead)

    dm = demand(policy, r, state.work_per_request, state.last_waiting, state.last_growth, now)
    cp = capacity(policy, signals, replicas, dm.served, dm.waiting, r.kv_cache_usage, True, state.capacity,
                  state.load_factor, state.settled_since, now - prev_tick if prev_tick is not None else 0.0, now)
    pr = predictive(policy, forecast_cfg or forecast_config(policy), state.forecast, state.forecast_step_seconds,
                    state.forecast_seed, state.forecast_cache, now, dm.offered, cp.usable, lead.high_seconds)
    re = reactive(policy, dm.offered, dm.backlog, dm.waiting, r.running, replicas.ready, cp.factor, cp.usable,
                  ready_in(policy, replicas, state.coldstart, signals.cluster, lead))
    pn = panic(policy, r.queue_time_p90_seconds, r.ttft_p90_seconds, state.panic_until, now)
    b = binding({"predictive": pr.replicas, "reactive": re.replicas, "concurrency": re.concurrency,
                 "floor": floor}, top)
    stuck = stuck_unschedulable(policy, replicas)
    st = stabilize(state.recommendations, now, stabilization_window_seconds(policy, lead), current, b.raw)
    decisions = since(state.decisions, now - _rate_limit_period(policy))
    components: dict[str, float] = {
        **dm.explain(), **re.explain(), **cp.explain(), **pr.explain(), "reactive": re.replicas,
        "concurrency": re.concurrency, "floor": floor, "max": top, "lead_time_high_s": round(lead.high_seconds, 1),
    }

    reason: Reason
    if b.raw > current:
        desired, reason = scale_up(policy, decisions, now, current, b.raw, b.binding, pn.active)
        if stuck:
            desired, reason = current, Reason.UNSCHEDULABLE
    elif st.value >= current:
        desired, reason = current, (Reason.STEADY if b.raw == current else Reason.STABILIZING)
    elif pn.active:
        desired, reason = current, Reason.PANIC_HOLD
    else:
        desired, reason = scale_down(policy, decisions, now, current, st.value), Reason.SCALE_DOWN
        components["stabilized"] = st.value
    desired, reason = clamp(desired, reason, floor, top)

    next_state = replace(
        state,
        recommendations=st.recommendations,
        decisions=(*decisions, (now, desired)),
        panic_until=pn.until,
        forecast=pr.forecast,
        forecast_step_seconds=policy.forecast.step_seconds if pr.forecast is not None else None,
        forecast_seed=None if pr.forecast is not None else state.forecast_seed,
        forecast_cache=pr.cache,
        capacity=cp.stats,
        last_waiting=(now, dm.waiting),
        last_growth=dm.growth,
        load_factor=cp.load_factor,
        settled_since=cp.settled_since,
        work_per_request=dm.work_per_request,
    )
    d = Decision(
        desired_replicas=desired,
        current_replicas=current,
        reason=reason,
        binding=b.binding,
        components=components,
        lead_time_seconds=lead.high_seconds,
        forecast_work=pr.forecast_work,
        panic=pn.active,
        metrics_fresh=True,
        unschedulable_stuck=stuck,
        message=_message(reason, desired, current, b.binding, b.raw, stuck),
    )
    return DecisionResult(d, next_state)


def _missing_metrics(
    policy: PolicySpec, state: CoreState, now: float, current: int, floor: int, top: int, lead: LeadTime
) -> DecisionResult:
    """Demand unknown: never scale down; do what the policy says (hold, floor or a fixed fallback)."""
    action = policy.on_missing_metrics.action
    desired = min(top, max(floor, missing_target(policy, current)))
    recs = (*since(state.recommendations, now - stabilization_window_seconds(policy, lead)), (now, desired))
    decisions = (*since(state.decisions, now - _rate_limit_period(policy)), (now, desired))
    next_state = replace(state, recommendations=recs, decisions=decisions, last_waiting=None)
    d = Decision(
        desired_replicas=desired,
        current_replicas=current,
        reason=Reason.METRICS_MISSING,
        binding=f"onMissingMetrics:{action}",
        components={"floor": floor, "max": top},
        lead_time_seconds=lead.high_seconds,
        forecast_work=None,
        panic=False,
        metrics_fresh=False,
        unschedulable_stuck=0,
        message=(f"demand metrics missing or stale: {action} -> {desired}"
                 + (f" (up from {current}: floor/fallback)" if desired > current else "")
                 + " (never scale down on unknown data)"),
    )
    return DecisionResult(d, next_state)


def _message(reason: Reason, desired: int, current: int, binding: str, raw: int, stuck: int) -> str:
    if reason is Reason.UNSCHEDULABLE:
        return f"{stuck} replica(s) unschedulable past the limit; holding at {current} instead of {raw}"
    if reason is Reason.SCALE_UP_RATE_LIMITED:
        return f"scale up {current} -> {desired} (wanted {raw} by {binding}; rate-limited)"
    if desired > current:
        return f"scale up {current} -> {desired} ({binding})"
    if desired < current:
        return f"scale down {current} -> {desired} (stabilized recommendation; {binding} wants {raw})"
    if reason is Reason.STABILIZING:
        return f"hold at {current}: {binding} wants {raw}, waiting out the stabilization window"
    if reason is Reason.PANIC_HOLD:
        return f"hold at {current}: SLO breached recently (panic), no scale-down"
    return f"steady at {current} ({binding})"
