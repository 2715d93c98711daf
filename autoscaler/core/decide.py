"""The decision: a pure function of (policy, signals, state, now).

No I/O and no wall clock: the controller, the simulator and the backtest all call `decide` with their
own clock and sources, so what is measured in simulation is what runs in the cluster.

How the number is made (each step is a component of the returned explanation):
1. Offered demand = served work + backlog growth: served throughput hides demand once replicas saturate.
2. Predictive: the forecast of demand at the policy's quantile over a horizon equal to the expected
   cold start (high quantile), divided by usable per-replica capacity.
3. Reactive: current demand plus the capacity needed to drain the queue projected to the moment the
   replicas already starting are ready. Starting replicas thus count at their expected ready time, and
   a queue that grows while they start does not make us order the same replicas again.
4. Floors (min and time-of-day), max, and a hold on replicas stuck unschedulable.
5. Scale-up rate limit (lifted in panic, when the SLO is already breached); scale-down only to the
   maximum recommendation over a stabilization window at least as long as a cold start, by a bounded step.
6. Stale or missing demand never scales down: the policy's onMissingMetrics says what it leads to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum

from autoscaler.core.capacity import work_rate
from autoscaler.core.coldstart import LeadTime, lead_time, remaining_seconds, stage_medians
from autoscaler.core.floors import floor_at, highest_floor
from autoscaler.core.forecast_seed import ForecastSeed
from autoscaler.core.signals import Signals
from autoscaler.core.state import CoreState
from autoscaler.policy import PolicySpec
from forecasting import ForecastConfig, ForecastState, new_state, observe, predict

# Replica-seconds per request assumed before any is measured: 1,000 prompt + 200 generated tokens at a
# typical prior. Only used to size a backlog before the first request-rate sample arrives.
_DEFAULT_PROMPT_TOKENS, _DEFAULT_GENERATION_TOKENS = 1000.0, 200.0
_WORK_PER_REQUEST_EMA = 0.2
_MAX_WORK_PER_REQUEST = 600.0  # replica-seconds: ten minutes of a whole replica for one request
_MAX_REPLICAS = 1_000_000  # arithmetic ceiling, far above any policy's max
# SLO misses count towards the load factor only once the fleet has been settled this long: latency
# histograms cover a rate window (~1 min) and include requests that queued before capacity arrived.
_SETTLED_SECONDS = 120.0
_MAX_PLANNED_UTILIZATION = 0.95


def _replicas_for(work: float, per_replica: float) -> int:
    """Replicas needed to carry `work`, robust to absurd inputs (they end at replicas.max anyway)."""
    n = work / per_replica
    return _MAX_REPLICAS if not n < _MAX_REPLICAS else max(0, math.ceil(n - 1e-9))


class Reason(str, Enum):
    SCALE_UP_PREDICTIVE = "ScaleUpPredictive"
    SCALE_UP_REACTIVE = "ScaleUpReactive"
    SCALE_UP_FLOOR = "ScaleUpFloor"
    SCALE_UP_RATE_LIMITED = "ScaleUpRateLimited"
    SCALE_DOWN = "ScaleDown"
    SCALE_DOWN_MAX = "ScaleDownToMax"
    STABILIZING = "HoldStabilizing"
    PANIC_HOLD = "HoldPanic"
    STEADY = "Steady"
    METRICS_MISSING = "MetricsMissing"
    UNSCHEDULABLE = "HoldUnschedulable"
    TARGET_UNKNOWN = "TargetUnknown"


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


def _prune(pairs: tuple[tuple[float, int], ...], since: float) -> tuple[tuple[float, int], ...]:
    i = 0
    while i < len(pairs) and pairs[i][0] < since:
        i += 1
    return pairs[i:] if i else pairs


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
    floor = floor_at(policy.replicas, now)
    top = policy.replicas.max

    if replicas is None or replicas.age_seconds > stale:
        d = Decision(None, None, Reason.TARGET_UNKNOWN, "target", {}, lead.median_seconds, None, False,
                     False, 0, "target replicas unknown or stale: nothing written")
        return DecisionResult(d, state)
    current = replicas.desired

    prompt = signals.prompt_tokens_rate.fresh(stale)
    gen = signals.generation_tokens_rate.fresh(stale)
    if prompt is None or gen is None or prompt < 0 or gen < 0:
        return _missing_metrics(policy, state, now, current, floor, top, lead)

    cap = policy.capacity
    served = work_rate(cap, prompt, gen)
    waiting = signals.waiting.fresh(stale)
    waiting = max(0.0, waiting) if waiting is not None else 0.0
    running = signals.running.fresh(stale)
    kv = signals.kv_cache_usage.fresh(stale)

    # Work per request (EMA) sizes the backlog.
    wpr = state.work_per_request
    rate = signals.request_rate.fresh(stale)
    if rate is not None and rate > 1e-6 and served > 0:
        sample = served / rate
        if sample <= _MAX_WORK_PER_REQUEST:  # beyond that the two rates are out of step, not a real request
            wpr = sample if wpr is None else wpr + _WORK_PER_REQUEST_EMA * (sample - wpr)
    if wpr is None:
        wpr = work_rate(cap, _DEFAULT_PROMPT_TOKENS, _DEFAULT_GENERATION_TOKENS)

    # 1. Offered demand: served + backlog growth (only from a recent previous sample).
    # A queue that grew over two intervals in a row is demand; a one-scrape spike is a burst already
    # absorbed by the queue (it shows up in `backlog`), and extrapolating it over a cold start would
    # order replicas that arrive after the queue has drained.
    growth = 0.0
    if state.last_waiting is not None:
        t0, w0 = state.last_waiting
        dt = now - t0
        if 0 < dt <= 4 * policy.interval_seconds:
            growth = max(0.0, (waiting - w0) / dt)
    offered = served + min(growth, state.last_growth) * wpr
    backlog = waiting * wpr

    # Capacity: learned only while saturated (a queue, or the KV cache full).
    saturated = waiting >= 1.0 or (kv is not None and kv >= 0.95)
    capacity_stats = state.capacity.observe(cap, served, replicas.ready) if saturated else state.capacity
    factor = capacity_stats.factor(cap)
    settled = not replicas.starting and replicas.ready >= replicas.desired and waiting < 1.0
    settled_since = (state.settled_since if state.settled_since is not None else now) if settled else None
    load_factor = _load_factor(policy, signals, state.load_factor,
                               now - prev_tick if prev_tick is not None else 0.0,
                               now - settled_since if settled_since is not None else 0.0, stale)
    # Work one replica should carry: never planned past 95% of what it can serve.
    usable = factor * min(_MAX_PLANNED_UTILIZATION, cap.target_utilization / load_factor)

    # 2. Predictive.
    fstate = state.forecast
    forecast_cache = state.forecast_cache
    forecast_work: float | None = None
    predictive = 0
    if policy.forecast.enabled:
        fcfg = forecast_cfg or forecast_config(policy)
        if fstate is None or state.forecast_step_seconds != fcfg.step_seconds:
            fstate = _forecaster(state, fcfg)
        fstate = observe(fcfg, fstate, now, offered)
        q = policy.forecast.quantile
        key = (int(now // fcfg.step_seconds), math.ceil(lead.high_seconds / fcfg.step_seconds), q)
        cache = state.forecast_cache
        if cache is not None and cache[:3] == key:
            forecast_work = cache[3]
        else:
            fc = predict(fcfg, fstate, lead.high_seconds, (q,))
            forecast_work = fc.quantiles.get(q, fc.point)
            forecast_cache = (*key, forecast_work)
        predictive = _replicas_for(forecast_work, usable)

    # 3. Reactive, with starting replicas counted at their expected ready time.
    active_starting = [s for s in replicas.starting if not s.unschedulable]
    if active_starting:
        medians = stage_medians(policy.cold_start, state.coldstart, signals.cluster)
        ready_in = max(remaining_seconds(medians, s.stage, s.stage_age_seconds) for s in active_starting)
    else:
        ready_in = lead.median_seconds
    ready_capacity = replicas.ready * factor
    projected_backlog = max(0.0, backlog + (offered - ready_capacity) * ready_in)
    drain = max(policy.scale_up.backlog_drain_seconds, policy.slo.queue_budget_seconds)
    reactive = _replicas_for(offered + projected_backlog / drain, usable)
    concurrency = 0
    if cap.max_concurrency is not None and running is not None:
        concurrency = _replicas_for(max(0.0, running) + waiting, cap.max_concurrency * cap.target_utilization)

    # Panic: the SLO is already breached.
    panic_until = state.panic_until
    breached = False
    qt = signals.queue_time_p90_seconds.fresh(stale)
    ttft = signals.ttft_p90_seconds.fresh(stale)
    panic_spec = policy.scale_up.panic
    if panic_spec.enabled:
        if qt is not None and qt > policy.slo.queue_budget_seconds * panic_spec.queue_time_ratio:
            breached = True
        if ttft is not None and policy.slo.ttft_seconds is not None and (
            ttft > policy.slo.ttft_seconds * panic_spec.queue_time_ratio
        ):
            breached = True
        if breached:
            panic_until = now + panic_spec.hold_seconds
    panic = panic_until is not None and now < panic_until

    components = {
        "offered_work": round(offered, 4),
        "served_work": round(served, 4),
        "backlog_work": round(backlog, 4),
        "projected_backlog_work": round(projected_backlog, 4),
        "capacity_factor": round(factor, 4),
        "load_factor": round(load_factor, 4),
        "predictive": predictive,
        "reactive": reactive,
        "concurrency": concurrency,
        "floor": floor,
        "max": top,
        "lead_time_high_s": round(lead.high_seconds, 1),
    }
    candidates = {"predictive": predictive, "reactive": reactive, "concurrency": concurrency, "floor": floor}
    binding = max(candidates, key=lambda k: candidates[k])
    raw = candidates[binding]
    if raw > top:
        raw, binding = top, "max"

    # 4. Replicas stuck unschedulable past the limit: report, do not pile on.
    limit = policy.cold_start.unschedulable_limit_seconds
    stuck = sum(1 for s in replicas.starting if s.unschedulable and s.age_seconds > limit)

    # 5. Limits. The recommendation window remembers raw recommendations for stabilization.
    window = stabilization_window_seconds(policy, lead)
    # With no remembered recommendations (first tick, or a restart without state) act as if the current
    # count had been recommended all along: no scale-down until a whole window of evidence says so.
    past = _prune(state.recommendations, now - window) if state.recommendations else ((now, current),)
    recs = (*past, (now, raw))
    longest = max(policy.scale_up.period_seconds, policy.scale_down.period_seconds)
    decisions = _prune(state.decisions, now - longest)

    reason: Reason
    if raw > current:
        up_since = [r for t, r in decisions if t >= now - policy.scale_up.period_seconds]
        ref = min([current, *up_since])
        pct = panic_spec.max_step_percent if panic else policy.scale_up.max_step_percent
        allowed = ref + max(policy.scale_up.max_step_replicas, math.ceil(ref * pct / 100.0))
        desired = min(raw, max(allowed, current))
        reason = {
            "predictive": Reason.SCALE_UP_PREDICTIVE,
            "floor": Reason.SCALE_UP_FLOOR,
        }.get(binding, Reason.SCALE_UP_REACTIVE)
        if desired < raw:
            reason = Reason.SCALE_UP_RATE_LIMITED
        if stuck:
            desired, reason = current, Reason.UNSCHEDULABLE
    else:
        stabilized = max(r for _, r in recs)
        if stabilized >= current:
            desired, reason = current, (Reason.STEADY if raw == current else Reason.STABILIZING)
        elif panic:
            desired, reason = current, Reason.PANIC_HOLD
        else:
            down_since = [r for t, r in decisions if t >= now - policy.scale_down.period_seconds]
            ref = max([current, *down_since])
            step = max(policy.scale_down.max_step_replicas, math.floor(ref * policy.scale_down.max_step_percent / 100))
            desired, reason = max(stabilized, ref - step, current - step), Reason.SCALE_DOWN
            components["stabilized"] = stabilized

    if desired < floor:
        desired, reason = floor, Reason.SCALE_UP_FLOOR
    if desired > top:
        desired, reason = top, Reason.SCALE_DOWN_MAX

    next_state = replace(
        state,
        recommendations=recs,
        decisions=(*decisions, (now, desired)),
        panic_until=panic_until if panic else None,
        forecast=fstate,
        forecast_step_seconds=policy.forecast.step_seconds if fstate is not None else None,
        forecast_seed=None if fstate is not None else state.forecast_seed,
        forecast_cache=forecast_cache,
        capacity=capacity_stats,
        last_waiting=(now, waiting),
        last_growth=growth,
        load_factor=load_factor,
        settled_since=settled_since,
        work_per_request=wpr,
    )
    d = Decision(
        desired_replicas=desired,
        current_replicas=current,
        reason=reason,
        binding=binding,
        components=components,
        lead_time_seconds=lead.high_seconds,
        forecast_work=forecast_work,
        panic=panic,
        metrics_fresh=True,
        unschedulable_stuck=stuck,
        message=_message(reason, desired, current, binding, raw, stuck),
    )
    return DecisionResult(d, next_state)


def slo_attainment(policy: PolicySpec, signals: Signals, stale: float) -> float | None:
    """Share of recent requests that met the SLO (the lower of TTFT and queue time when both are set),
    or None when no fresh histogram has enough requests to judge."""
    slo = policy.slo
    need = policy.capacity.slo_feedback.min_requests
    shares = []
    for hist, limit in ((signals.ttft_histogram, slo.ttft_seconds),
                        (signals.queue_time_histogram, slo.queue_time_seconds)):
        if hist is None or limit is None or hist.age_seconds > stale or hist.total < need:
            continue
        share = hist.share_within(limit)
        if share is not None:
            shares.append(share)
    return min(shares) if shares else None


def _load_factor(policy: PolicySpec, signals: Signals, h: float, since_last_tick: float, settled_for: float,
                 stale: float) -> float:
    """The SLO-feedback factor on the load each replica is planned for (see SLOFeedbackSpec).

    Misses while the fleet has been settled for a while (nothing starting, no queue left from a
    scale-up) raise it with the shortfall, up to ×1.65 a minute at a full miss. Attainment with half
    the error budget to spare lowers it with e-folding time `relaxSeconds`. In between it holds."""
    spec = policy.capacity.slo_feedback
    if not spec.enabled:
        return 1.0
    dt = min(since_last_tick, 4 * policy.interval_seconds)
    attained = slo_attainment(policy, signals, stale)
    if attained is None or dt <= 0:
        return h
    target = policy.slo.quantile
    budget = max(1e-6, 1.0 - target)
    if attained < target:
        if settled_for >= _SETTLED_SECONDS:
            h *= math.exp(0.5 * min(1.0, (target - attained) / budget) * dt / 60.0)
    elif attained >= target + budget / 2:
        h *= math.exp(-dt / spec.relax_seconds)
    return min(spec.max, max(spec.min, h))


def _forecaster(state: CoreState, config: ForecastConfig) -> ForecastState:
    """The forecaster to continue from: restored history, or the current one re-bucketed after the
    policy changed its step, or a fresh one."""
    seed = state.forecast_seed
    if state.forecast is not None and state.forecast_step_seconds is not None:
        seed = ForecastSeed.of(state.forecast, state.forecast_step_seconds)
    return seed.rebuild(config) if seed is not None else new_state(config)


def _missing_metrics(
    policy: PolicySpec, state: CoreState, now: float, current: int, floor: int, top: int, lead: LeadTime
) -> DecisionResult:
    """Demand unknown: never scale down; do what the policy says (hold, floor or a fixed fallback)."""
    action = policy.on_missing_metrics
    target = current
    if action.action == "floor":
        target = max(current, highest_floor(policy.replicas))
    elif action.action == "fixed" and action.replicas is not None:
        target = max(current, action.replicas)
    desired = min(top, max(floor, target))
    window = stabilization_window_seconds(policy, lead)
    recs = (*_prune(state.recommendations, now - window), (now, desired))
    longest = max(policy.scale_up.period_seconds, policy.scale_down.period_seconds)
    next_state = replace(state, recommendations=recs,
                         decisions=(*_prune(state.decisions, now - longest), (now, desired)), last_waiting=None)
    d = Decision(
        desired_replicas=desired,
        current_replicas=current,
        reason=Reason.METRICS_MISSING,
        binding=f"onMissingMetrics:{action.action}",
        components={"floor": floor, "max": top},
        lead_time_seconds=lead.high_seconds,
        forecast_work=None,
        panic=False,
        metrics_fresh=False,
        unschedulable_stuck=0,
        message=(f"demand metrics missing or stale: {action.action} -> {desired}"
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
