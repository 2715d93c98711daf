"""`kpa`: the Knative Pod Autoscaler on concurrency, as knative/serving does it.

Follows `pkg/autoscaler/scaling/autoscaler.go` (see docs/baselines.md):
- `newAutoscaler`: a decider created while more than one pod is ready starts in panic mode, with
  `panicTime = now` and `maxPanicPods` = the ready count, "keeping at least the current scale until we
  accumulate enough data"; with 0 or 1 ready pods it starts stable.
- `Scale`, every 2 s (`tickInterval`): `readyPodsCount = max(1, ready)`; `dspc = ceil(stable / target)`,
  `dppc = ceil(panic / target)`, both clamped to `[floor(ready / max-scale-down-rate),
  ceil(max-scale-up-rate × ready)]`. Panic is decided on the *raw* `dppc / readyPodsCount ≥ panic
  threshold` (not the clamped count); each tick over the threshold moves `panicTime` to now, and panic ends
  only when a tick is under the threshold a full stable window after the last `panicTime`. While
  panicking, `desired = max(stable, panic)` and never below `maxPanicPods`. Then, with a scale-down-delay,
  `desired` is the maximum recorded over that delay (`aggregation/max.TimeWindow`, 2-s buckets).
  No data in the window (`ErrNoData`) means no decision.
- Window averages (`aggregation.TimedFloat64Buckets.WindowAverage`, the default linear algorithm): the
  mean of the 1-s buckets written within the window (stable 60 s, panic = 10% of it).
- Defaults (`config-autoscaler`): target = `autoscaling.knative.dev/target` × 70%
  (`container-concurrency-target-percentage`), panic threshold 200%, max-scale-up-rate 1000,
  max-scale-down-rate 2, scale-down-delay 0. The revision's min-scale and max-scale bound the result
  (`pkg/reconciler/autoscaling/kpa/scaler.go`, `applyBounds`).

Concurrency is what the queue-proxies and the activator report: every request in flight, including those
buffered before a pod is ready (the fleet's `in_flight`), sampled each second.
"""

from __future__ import annotations

import math
from collections import deque

from simulations.autoscalers.base import Context

TICK_SECONDS = 2.0
SCRAPE_SECONDS = 1.0


class MaxTimeWindow:
    """`aggregation/max.TimeWindow`: the maximum value recorded within the last `duration` seconds."""

    def __init__(self, duration_seconds: float, granularity_seconds: float = TICK_SECONDS):
        self.size = max(1, math.ceil(duration_seconds / granularity_seconds))
        self.granularity = granularity_seconds
        self._maxima: deque[tuple[int, int]] = deque()  # (bucket index, value), values descending

    def record(self, now: float, value: int) -> None:
        index = int(now // self.granularity)
        while self._maxima and value >= self._maxima[-1][1]:
            self._maxima.pop()
        while self._maxima and index - self._maxima[0][0] >= self.size:
            self._maxima.popleft()
        self._maxima.append((index, value))

    def current(self) -> int:
        return self._maxima[0][1]


class Kpa:
    name = "kpa"

    def __init__(self, target: float, target_percentage: float = 70.0, stable_window_seconds: float = 60.0,
                 panic_window_percentage: float = 10.0, panic_threshold_percentage: float = 200.0,
                 max_scale_up_rate: float = 1000.0, max_scale_down_rate: float = 2.0,
                 scale_down_delay_seconds: float = 0.0, min_scale: int | None = None):
        if not target > 0:
            raise ValueError("the KPA target must be > 0")
        if not 6 <= stable_window_seconds <= 3600:
            raise ValueError("the stable window must be within 6 s..1 h")
        if not 0 <= scale_down_delay_seconds <= 3600:
            raise ValueError("scale-down-delay must be within 0..1 h")
        if min_scale is not None and min_scale < 1:
            raise ValueError("min-scale must be ≥ 1 here (scale to zero is not modelled)")
        self.target_annotation = target
        self.target = target * target_percentage / 100.0
        self.stable_window = stable_window_seconds
        self.panic_window = stable_window_seconds * panic_window_percentage / 100.0
        self.panic_threshold = panic_threshold_percentage / 100.0
        self.max_up, self.max_down = max_scale_up_rate, max_scale_down_rate
        self.delay = MaxTimeWindow(scale_down_delay_seconds) if scale_down_delay_seconds > 0 else None
        self.min_scale = min_scale
        self.interval_seconds = SCRAPE_SECONDS  # scrape each second; decide every TICK_SECONDS
        self._samples: deque[tuple[float, float]] = deque()
        self.panic_time: float | None = None
        self.max_panic_pods = 0
        self.started = False
        self._next_decision = 0.0

    def initial_replicas(self, default: int) -> int:
        return default if self.min_scale is None else max(default, self.min_scale)

    def start(self, now: float, ready: int) -> None:
        """`newAutoscaler`: start in panic mode when more than one pod is ready."""
        self.started = True
        self.max_panic_pods = ready
        self.panic_time = now if ready > 1 else None

    def observe(self, now: float, concurrency: float) -> None:
        self._samples.append((now, concurrency))
        while self._samples and self._samples[0][0] <= now - self.stable_window:
            self._samples.popleft()

    def _average(self, now: float, window: float) -> float | None:
        vals = [c for t, c in self._samples if t > now - window]
        return sum(vals) / len(vals) if vals else None

    def decide(self, now: float, ready: int) -> int | None:
        if not self.started:
            self.start(now, ready)
        stable = self._average(now, self.stable_window)
        panic = self._average(now, self.panic_window)
        if stable is None or panic is None:
            return None  # ErrNoData: no decision
        ready_pods = max(1, ready)
        lo = math.floor(ready_pods / self.max_down)
        hi = math.ceil(self.max_up * ready_pods)
        dspc = math.ceil(stable / self.target - 1e-9)
        dppc = math.ceil(panic / self.target - 1e-9)
        desired_stable = min(hi, max(lo, dspc))
        desired_panic = min(hi, max(lo, dppc))
        over = dppc / ready_pods >= self.panic_threshold  # on the raw panic pod count
        if over:
            self.panic_time = now
        elif self.panic_time is not None and self.panic_time + self.stable_window < now:
            self.panic_time, self.max_panic_pods = None, 0
        desired = desired_stable
        if self.panic_time is not None:
            desired = max(desired, desired_panic)
            if desired > self.max_panic_pods:
                self.max_panic_pods = desired
            desired = self.max_panic_pods
        if self.delay is not None:
            self.delay.record(now, desired)
            desired = self.delay.current()
        return desired

    @property
    def panicking(self) -> bool:
        return self.panic_time is not None

    def tick(self, now: float, ctx: Context) -> int | None:
        if not self.started:
            self.start(now, ctx.fleet.ready_replicas)
        self.observe(now, float(ctx.fleet.in_flight))
        if now + 1e-9 < self._next_decision:
            return None
        self._next_decision = now + TICK_SECONDS
        d = self.decide(now, ctx.fleet.ready_replicas)
        lo = ctx.min_replicas if self.min_scale is None else self.min_scale
        return None if d is None else max(lo, min(max(lo, ctx.max_replicas), d))
