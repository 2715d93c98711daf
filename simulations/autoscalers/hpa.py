"""`hpa`: the Kubernetes HorizontalPodAutoscaler (autoscaling/v2) on a vLLM metric, as its source does it.

Follows kubernetes/kubernetes `pkg/controller/podautoscaler/` (see docs/baselines.md):

- `horizontal.go`, `reconcileAutoscaler`: every sync (15 s, `--horizontal-pod-autoscaler-sync-period`; the
  first one 15 s after creation, since `enqueueHPA` adds with `rate_limiters.go`'s fixed-interval limiter)
  it reads `spec.replicas` and first calls `recordInitialRecommendation`, which seeds the recommendation
  list with the current count the first time it sees the HPA. A fresh HPA therefore cannot scale below the
  count it found until a whole scale-down stabilization window has passed. Current below `minReplicas`
  (above `maxReplicas`) goes straight to the bound; a replica count of 0 with `minReplicas` ≠ 0 disables it.
- `replica_calculator.go`, `calcPlainMetricReplicas` (a Pods metric with an AverageValue target) after
  `groupPods`: pods being deleted are ignored; Pending pods are *unready* (left out, counted at 0 only on
  a scale-up); Running pods without a sample are *missing* (counted at the target on a scale-down, at 0 on a
  scale-up); the others are ready with metrics. `ratio = mean / target`; no change inside the 0.1
  tolerance (`Tolerances.isWithin`, both ends inclusive); with no unready-on-scale-up and no missing pod
  `ceil(ratio × ready)`; else the ratio is recomputed with the set-aside pods and nothing happens if that
  lands inside the tolerance or flips direction. No pod with a sample means an error: no action.
- `stabilizeRecommendationWithBehaviors`: scale-up uses the minimum, scale-down the maximum of the
  recommendations recorded within each direction's stabilization window (`After(cutoff)`: strictly newer).
- `normalizeDesiredReplicasWithBehaviors` → `convertDesiredReplicasWithBehaviorRate`: the rate policies
  are measured from the replica count at the start of each policy period (`getReplicasChangePerPeriod`
  over both directions' events); scale-up Percent rounds up, scale-down Percent truncates
  (`calculateScaleDownLimitWithBehaviors`); `selectPolicy: Max` takes the policy allowing the larger change.
  Defaults: up window 0 s, Percent 100 / 15 s and Pods 4 / 15 s; down window 300 s, Percent 100 / 15 s.

The simulated pods come from the scale target's replica counts: a starting replica in node provisioning,
scheduling or image pull is Pending; in weight load or warmup it is Running without a sample (vLLM serves
/metrics only once the engine is up); ready replicas have a sample if they were serving at the last scrape;
draining replicas carry a deletion timestamp and are ignored. The per-pod value is what prometheus-adapter
returns from the last scrape (its age is up to one 15-s scrape interval; `adapter_lag_seconds` adds more).

Signals (`signal`), each a Pods metric with an AverageValue target:
- `running`: `vllm:num_requests_running` per pod;
- `waiting`: `vllm:num_requests_waiting` per pod;
- `queue_p90`: p90 of `vllm:request_queue_time_seconds` over 1 m (an adapter rule around
  `histogram_quantile(0.9, rate(..._bucket[1m]))`); every pod reports the fleet's value.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from autoscaler.core import ReplicaCounts
from simulations.autoscalers.base import Context
from simulations.sample import FleetSample

TOLERANCE = 0.1
SYNC_PERIOD_SECONDS = 15.0
ADAPTER_LAG_SECONDS = 0.0
DEFAULT_DOWN_WINDOW_SECONDS = 300.0
PENDING_STAGES = frozenset({"node_provisioning", "scheduling", "image_pull"})


def within_tolerance(ratio: float, tolerance: float = TOLERANCE) -> bool:
    """`Tolerances.isWithin`: 1 − down ≤ ratio ≤ 1 + up."""
    return 1.0 - tolerance <= ratio <= 1.0 + tolerance


@dataclass(frozen=True)
class PodGroups:
    """`groupPods` for a non-CPU metric: how the replica calculator sees the target's pods."""

    ready: int  # Running with a sample (for non-CPU metrics readiness is not checked)
    missing: int  # Running, no sample
    unready: int  # Pending
    ignored: int  # being deleted

    @property
    def status_replicas(self) -> int:
        """The Deployment's `status.replicas`: pods not being deleted."""
        return self.ready + self.missing + self.unready


def group_pods(counts: ReplicaCounts, sampled: int) -> PodGroups:
    """Pods of the target by `groupPods`' classes; `sampled` = pods in the last scrape (ready or draining)."""
    pending = sum(1 for s in counts.starting if s.unschedulable or s.stage in PENDING_STAGES)
    loading = len(counts.starting) - pending
    with_sample = min(counts.ready, sampled)
    return PodGroups(ready=with_sample, missing=counts.ready - with_sample + loading, unready=pending,
                     ignored=counts.terminating)


def plain_metric_replicas(current: int, per_pod: float, target: float, pods: PodGroups,
                          tolerance: float = TOLERANCE) -> int | None:
    """`calcPlainMetricReplicas`: the recommendation for a Pods metric, or None (error: no action)."""
    if pods.ready <= 0:
        return None  # "did not receive metrics for targeted pods"
    total = per_pod * pods.ready
    ratio = per_pod / target
    scale_up_with_unready = pods.unready > 0 and ratio > 1.0
    if not scale_up_with_unready and pods.missing == 0:
        if within_tolerance(ratio, tolerance):
            return current
        return math.ceil(ratio * pods.ready - 1e-9)
    n = pods.ready
    if pods.missing:
        if ratio < 1.0:  # scale-down: missing pods use exactly the target
            total += pods.missing * target
            n += pods.missing
        elif ratio > 1.0:  # scale-up: missing pods use 0
            n += pods.missing
    if scale_up_with_unready:
        n += pods.unready
    new_ratio = total / (n * target)
    if within_tolerance(new_ratio, tolerance) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    new = math.ceil(new_ratio * n - 1e-9)
    if (new_ratio < 1.0 and new > current) or (new_ratio > 1.0 and new < current):
        return current
    return new


@dataclass(frozen=True)
class ScalingPolicy:
    kind: str  # "Pods" | "Percent"
    value: float
    period_seconds: float


DEFAULT_UP_POLICIES = (ScalingPolicy("Percent", 100, 15), ScalingPolicy("Pods", 4, 15))
DEFAULT_DOWN_POLICIES = (ScalingPolicy("Percent", 100, 15),)


def parse_policy(text: str) -> tuple[ScalingPolicy, ...]:
    """`100%/15s` → Percent 100 per 15 s; `1pod/60s` → Pods 1 per 60 s (one `behavior` policy)."""
    amount, _, period = text.partition("/")
    if not period.endswith("s"):
        raise ValueError(f"scaling policy {text!r}: write e.g. 100%/15s or 1pod/60s")
    seconds = float(period[:-1])
    if not 0 < seconds <= 1800:
        raise ValueError(f"scaling policy {text!r}: periodSeconds must be within 1..1800")
    if amount.endswith("%"):
        return (ScalingPolicy("Percent", float(amount[:-1]), seconds),)
    if amount.endswith("pod") or amount.endswith("pods"):
        return (ScalingPolicy("Pods", float(amount.rstrip("s").removesuffix("pod")), seconds),)
    raise ValueError(f"scaling policy {text!r}: write e.g. 100%/15s or 1pod/60s")


class HpaBehavior:
    """The controller's per-HPA memory: recommendations and scale events, with `behavior` applied."""

    def __init__(self, down_window_seconds: float = DEFAULT_DOWN_WINDOW_SECONDS, up_window_seconds: float = 0.0,
                 up_policies: tuple[ScalingPolicy, ...] = DEFAULT_UP_POLICIES,
                 down_policies: tuple[ScalingPolicy, ...] = DEFAULT_DOWN_POLICIES):
        if not 0 <= down_window_seconds <= 3600 or not 0 <= up_window_seconds <= 3600:
            raise ValueError("stabilizationWindowSeconds must be within 0..3600")
        self.down_window, self.up_window = down_window_seconds, up_window_seconds
        self.up_policies, self.down_policies = up_policies, down_policies
        self.recommendations: deque[tuple[float, int]] | None = None
        self._up_events: deque[tuple[float, int]] = deque()
        self._down_events: deque[tuple[float, int]] = deque()

    def record_initial(self, now: float, current: int) -> None:
        """`recordInitialRecommendation`: the first sync seeds the list with the current count."""
        if self.recommendations is None:
            self.recommendations = deque([(now, current)])

    def stabilize(self, now: float, current: int, desired: int) -> int:
        """`stabilizeRecommendationWithBehaviors`."""
        self.record_initial(now, current)
        recs = self.recommendations
        assert recs is not None
        up_cut, down_cut = now - self.up_window, now - self.down_window
        up_rec = down_rec = desired
        for t, r in recs:
            if t > up_cut:
                up_rec = min(up_rec, r)
            if t > down_cut:
                down_rec = max(down_rec, r)
        rec = current
        if rec < up_rec:
            rec = up_rec
        if rec > down_rec:
            rec = down_rec
        recs.append((now, desired))
        oldest = min(up_cut, down_cut)
        while recs and recs[0][0] <= oldest:
            recs.popleft()
        return rec

    @staticmethod
    def _change(events: deque[tuple[float, int]], now: float, period: float) -> int:
        return sum(c for t, c in events if t > now - period)

    def _period_start(self, now: float, current: int, period: float) -> int:
        return current - self._change(self._up_events, now, period) + self._change(self._down_events, now, period)

    def rate_limit(self, now: float, current: int, desired: int, lo: int, hi: int) -> int:
        """`convertDesiredReplicasWithBehaviorRate` with `selectPolicy: Max`."""
        if desired > current:
            limit = max(
                (self._period_start(now, current, p.period_seconds) + int(p.value)) if p.kind == "Pods"
                else math.ceil(self._period_start(now, current, p.period_seconds) * (1 + p.value / 100.0))
                for p in self.up_policies)
            limit = max(limit, current)
            return min(desired, min(hi, limit))
        if desired < current:
            limit = min(
                (self._period_start(now, current, p.period_seconds) - int(p.value)) if p.kind == "Pods"
                else int(self._period_start(now, current, p.period_seconds) * (1 - p.value / 100.0))
                for p in self.down_policies)
            limit = min(limit, current)
            return max(desired, max(lo, limit))
        return desired

    def normalize(self, now: float, current: int, desired: int, lo: int, hi: int) -> int:
        """`normalizeDesiredReplicasWithBehaviors`: stabilize, then rate-limit."""
        return self.rate_limit(now, current, self.stabilize(now, current, desired), lo, hi)

    def store_event(self, now: float, before: int, after: int) -> None:
        """`storeScaleEvent` (events older than the longest policy period no longer count)."""
        if after > before:
            self._up_events.append((now, after - before))
        elif after < before:
            self._down_events.append((now, before - after))
        longest = max(p.period_seconds for p in (*self.up_policies, *self.down_policies))
        for ev in (self._up_events, self._down_events):
            while ev and ev[0][0] <= now - longest:
                ev.popleft()

    def apply(self, now: float, current: int, recommendation: int, lo: int, hi: int) -> int:
        """One sync of `reconcileAutoscaler` from a metric recommendation: normalize, record the event."""
        desired = self.normalize(now, current, recommendation, lo, hi)
        if desired != current:
            self.store_event(now, current, desired)
        return desired


# ---- signals: per-pod value of the HPA's metric, from the metrics view ---------------------------------
PerPodSignal = Callable[[FleetSample, Context, float, float], float | None]


def _per_pod(total: Callable[[FleetSample], float]) -> PerPodSignal:
    def read(sample: FleetSample, ctx: Context, now: float, lag: float) -> float | None:
        n = sample.reporting_replicas
        return total(sample) / n if n else None
    return read


def _queue_p90(sample: FleetSample, ctx: Context, now: float, lag: float) -> float | None:
    return ctx.view.signals(now, lag).queue_time_p90_seconds.fresh(math.inf)


HPA_SIGNALS: dict[str, PerPodSignal] = {
    "running": _per_pod(lambda s: s.running),
    "waiting": _per_pod(lambda s: s.waiting),
    "queue_p90": _queue_p90,
}


def resolve_bounds(ctx: Context, min_replicas: int | None) -> tuple[int, int]:
    lo = ctx.min_replicas if min_replicas is None else min_replicas
    return lo, max(lo, ctx.max_replicas)


class Hpa:
    name = "hpa"

    def __init__(self, target: float, signal: str = "running",
                 down_window_seconds: float = DEFAULT_DOWN_WINDOW_SECONDS, min_replicas: int | None = None,
                 adapter_lag_seconds: float = ADAPTER_LAG_SECONDS,
                 down_policies: tuple[ScalingPolicy, ...] = DEFAULT_DOWN_POLICIES):
        if not target > 0:
            raise ValueError("the HPA target must be > 0")
        if signal not in HPA_SIGNALS:
            raise ValueError(f"unknown HPA signal {signal!r}: use one of {', '.join(HPA_SIGNALS)}")
        if min_replicas is not None and min_replicas < 1:
            raise ValueError("HPA minReplicas must be ≥ 1 (scale to zero needs the HPAScaleToZero gate)")
        self.target = target
        self.signal = signal
        self.read = HPA_SIGNALS[signal]
        self.min_replicas = min_replicas
        self.lag = adapter_lag_seconds
        self.interval_seconds = SYNC_PERIOD_SECONDS
        self.behavior = HpaBehavior(down_window_seconds, down_policies=down_policies)

    def initial_replicas(self, default: int) -> int:
        return default if self.min_replicas is None else max(default, self.min_replicas)

    def recommend(self, current: int, per_pod: float, pods: PodGroups) -> int | None:
        return plain_metric_replicas(current, per_pod, self.target, pods)

    def tick(self, now: float, ctx: Context) -> int | None:
        current = ctx.fleet.target
        lo, hi = resolve_bounds(ctx, self.min_replicas)
        self.behavior.record_initial(now, current)
        if current == 0:
            return None  # "scaling is disabled since the replica count of the target is zero"
        if current > hi or current < lo:
            desired = hi if current > hi else lo
            self.behavior.store_event(now, current, desired)
            return desired
        sample = ctx.view.latest(now, self.lag)
        if sample is None:
            return None
        per_pod = self.read(sample, ctx, now, self.lag)
        if per_pod is None:
            return None
        pods = group_pods(ctx.fleet.replica_counts(now), sample.reporting_replicas)
        rec = self.recommend(current, per_pod, pods)
        if rec is None:
            return None
        return self.behavior.apply(now, current, rec, lo, hi)
