"""Replay the decision core over a model's Prometheus history and estimate what each plan would cost.

Per step of the history (the virtual clock): the core sees the historical load signals (age 0) and the
replica counts of a simulated fleet that follows its own decisions (so cold starts delay its replicas
as they would have). Both plans, the core's and the replicas that actually ran, are then run through
the simulator's fluid fleet (`simulations.fluid.FluidFleet`) on the same demand, rebuilt from the
historical token and request rates, to estimate TTFT-SLO attainment and GPU-hours on equal terms.

Caveats (also in the report): the demand is what the real fleet *served* (a saturated fleet hides
demand), the per-request token lengths are the historical means, and the queue signals the core sees
are the real fleet's, not its own plan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from autoscaler.backtest.history import History
from autoscaler.core import CoreState, Measured, ReplicaCounts, Signals
from autoscaler.core.decide import decide, forecast_config
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.base import HISTOGRAM_FIELDS, load_signals, with_histograms
from autoscaler.sources.engines import SignalName

if TYPE_CHECKING:
    from simulations.fluid import FluidFleet

METHOD = ("fluid fleet (simulations.fluid.FluidFleet), demand rebuilt from the historical request and token "
          "rates at the step resolution")


@dataclass(frozen=True)
class Estimate:
    attainment: float
    ttft_p90_seconds: float
    gpu_hours: float
    requests: float

    def to_dict(self) -> dict[str, float]:
        return {k: (round(v, 6) if math.isfinite(v) else None) for k, v in self.__dict__.items()}  # type: ignore[misc]


@dataclass(frozen=True)
class BacktestResult:
    policy_key: str
    times: np.ndarray
    ours: np.ndarray  # desired replicas decided by the core
    ours_ready: np.ndarray  # ready replicas of the simulated fleet following those decisions
    actual: np.ndarray  # replicas that actually ran (NaN = unknown)
    reasons: list[str]
    demand_prompt_tokens_per_s: np.ndarray
    estimate_ours: Estimate | None
    estimate_actual: Estimate | None
    method: str = METHOD
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        known = np.isfinite(self.actual)
        counts: dict[str, int] = {}
        for r in self.reasons:
            counts[r] = counts.get(r, 0) + 1
        step = float(self.times[1] - self.times[0]) if len(self.times) > 1 else 0.0
        return {
            "policy": self.policy_key,
            "start": float(self.times[0]),
            "end": float(self.times[-1]),
            "step_seconds": step,
            "steps": len(self.times),
            "ours": {"mean_replicas": round(float(np.mean(self.ours)), 3), "max_replicas": int(np.max(self.ours)),
                     "replica_hours": round(float(np.sum(self.ours)) * step / 3600, 3),
                     "estimate": self.estimate_ours.to_dict() if self.estimate_ours else None},
            "actual": {"mean_replicas": round(float(np.nanmean(self.actual)), 3) if known.any() else None,
                       "max_replicas": int(np.nanmax(self.actual)) if known.any() else None,
                       "replica_hours": round(float(np.nansum(self.actual)) * step / 3600, 3),
                       "steps_known": int(known.sum()),
                       "estimate": self.estimate_actual.to_dict() if self.estimate_actual else None},
            "reasons": counts,
            "estimate_method": self.method,
            "notes": self.notes,
        }


def _profiles(policy: ModelScalingPolicy) -> tuple[Any, Any]:
    from simulations.profiles import ColdStartProfile, ServingProfile

    cap, cs = policy.spec.capacity, policy.spec.cold_start
    serving = ServingProfile(prefill_tokens_per_second=cap.prompt_tokens_per_second,
                             itl_per_sequence_seconds=1.0 / cap.generation_tokens_per_second,
                             gpus_per_replica=policy.spec.model.gpus_per_replica)
    cold = ColdStartProfile(name="policy-priors", scheduling_seconds=cs.scheduling_seconds,
                            node_provisioning_seconds=cs.node_provisioning_seconds,
                            image_pull_seconds=cs.image_pull_seconds, weight_load_seconds=cs.weight_load_seconds,
                            warmup_seconds=cs.warmup_seconds, spread=min(cs.spread, 2.0), free_gpus=None)
    return serving, cold


def _workload(history: History, step: float) -> Any:
    from simulations.trace import BinnedWorkload

    def col(s: SignalName) -> np.ndarray:
        a = history.signals[s]
        return np.where(np.isfinite(a) & (a >= 0), a, 0.0) * step

    counts, prompt, output = col(SignalName.REQUEST_RATE), col(SignalName.PROMPT_TOKENS_RATE), \
        col(SignalName.GENERATION_TOKENS_RATE)
    # A request carries at least one prompt token. vLLM counts a request when it finishes and its prompt
    # tokens when they are prefilled, so a step's ratio can dip under one; the fluid fleet refuses that.
    prompt = np.maximum(prompt, counts)
    total = max(float(counts.sum()), 1e-9)
    return BinnedWorkload(
        name="prometheus-history", bin_seconds=step, counts=counts, prompt_tokens=prompt, output_tokens=output,
        prompt_sample=np.array([max(1.0, float(prompt.sum()) / total)]),
        output_sample=np.array([max(1.0, float(output.sum()) / total)]),
        start_epoch=float(history.times[0]),
    )


def _estimate(fleet: Any, end: float, slo_ttft: float) -> Estimate:
    fleet.advance(end)
    o = fleet.outcome(slo_ttft)
    return Estimate(o.attainment, o.ttft_p90_seconds, o.gpu_hours, o.requests)


def _tick_signals(history: History, i: int, fleet: Any, desired: int, t_rel: float) -> Signals:
    """The signals of the history's step `i`, with the replica counts, cluster facts and cold-start
    observations of the fleet replaying ours (a FluidFleet, advanced to `t_rel`); without one (no request rate
    to replay) every replica ours asked for counts as ready."""
    values = {s: Measured(v, 0.0) for s in SignalName if (v := history.value(s, i)) is not None}
    hists = {s: history.histogram(s, i) for s in HISTOGRAM_FIELDS}
    if fleet is None:
        return replace(with_histograms(load_signals(values, Signals()), hists),
                       replicas=ReplicaCounts(desired=desired, ready=desired),
                       rate_window_seconds=history.window_seconds)
    fleet.advance(t_rel)
    # The gateway's count (scaleFromZero) is the replayed fleet's: what a gateway would have held under ours'
    # replicas, not what the one that ran counted beside the fleet that ran.
    return replace(with_histograms(load_signals(values), hists), replicas=fleet.replica_counts(t_rel),
                   rate_window_seconds=history.window_seconds, cluster=fleet.cluster_facts(t_rel),
                   observations=fleet.take_observations(t_rel), front_door=Measured(fleet.in_flight_requests, 0.0))


def replay(policy: ModelScalingPolicy, history: History) -> BacktestResult:
    from simulations.fluid import FluidFleet

    times = history.times
    n = len(times)
    step = float(times[1] - times[0]) if n > 1 else 60.0
    spec = policy.spec
    serving, cold = _profiles(policy)
    notes: list[str] = []
    actual = history.replicas
    first_actual = next((int(v) for v in actual if math.isfinite(v)), None)
    initial = max(1, first_actual if first_actual is not None else spec.replicas.min)

    workload = None
    if np.nansum(history.signals[SignalName.REQUEST_RATE]) > 0:
        workload = _workload(history, step)
    else:
        notes.append("no request rate in the history: SLO attainment and GPU-hours not estimated")
    missing = int(np.sum(~np.isfinite(history.signals[SignalName.PROMPT_TOKENS_RATE])))
    if missing:
        notes.append(f"{missing} of {n} steps had no prompt-token rate (the core held; demand counted as 0)")

    ours_fleet = FluidFleet(workload, serving, cold, initial_replicas=initial) if workload is not None else None
    ours, ours_ready, reasons = _ours(policy, history, ours_fleet, initial, step)

    est_ours = est_actual = None
    slo = spec.slo.ttft_seconds or 2.0 * spec.slo.queue_budget_seconds
    end_rel = n * step
    if ours_fleet is not None and workload is not None:
        est_ours = _estimate(ours_fleet, end_rel, slo)
        if first_actual is not None:
            act_fleet = FluidFleet(workload, serving, cold, initial_replicas=initial)
            current = initial
            for i in range(n):  # the replica counts the history recorded, as targets of the same fleet
                if math.isfinite(actual[i]) and int(actual[i]) != current:
                    current = int(actual[i])
                    act_fleet.set_target(current, i * step)
            est_actual = _estimate(act_fleet, end_rel, slo)
        else:
            notes.append("no replica count in the history: the actual plan is not estimated")
    demand = np.where(np.isfinite(history.signals[SignalName.PROMPT_TOKENS_RATE]),
                      history.signals[SignalName.PROMPT_TOKENS_RATE], np.nan)
    return BacktestResult(policy.key, times, ours, ours_ready, actual, reasons, demand, est_ours, est_actual,
                          notes=notes)


def _ours(policy: ModelScalingPolicy, history: History, fleet: FluidFleet | None, initial: int,
          step: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The decision core over the history, tick by tick: the replicas it would have asked for, those ready in
    the simulated fleet it drives (the count asked for without one), and each tick's reason."""
    spec, times = policy.spec, history.times
    n = len(times)
    fcfg = forecast_config(spec)
    state = CoreState()
    ours = np.zeros(n, dtype=np.int64)
    ours_ready = np.zeros(n, dtype=np.int64)
    reasons: list[str] = []
    desired = initial
    for i in range(n):
        t_rel = i * step
        result = decide(spec, _tick_signals(history, i, fleet, desired, t_rel), state, float(times[i]), fcfg)
        state = result.state
        d = result.decision
        if d.desired_replicas is not None:
            desired = d.desired_replicas
        ours[i] = desired
        reasons.append(d.reason.value)
        if fleet is not None:
            fleet.set_target(desired, t_rel)
            if spec.warm_capacity.enabled:  # the placeholder pool: its GPUs count in the estimate's GPU-hours
                fleet.lifecycle.set_warm_slots(d.warm_slots, t_rel)
            ours_ready[i] = fleet.ready_replicas
        else:
            ours_ready[i] = desired
    return ours, ours_ready, reasons
