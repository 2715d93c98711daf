"""`kpa`: the Knative Pod Autoscaler on concurrency, shared/docs/autoscaler-anchors.md §(b)3 (`autoscaler.go`).

- Pods are scraped every 1 s (directly, not through Prometheus) for in-flight requests, including those
  buffered by the activator; the decider ticks every 2 s.
- Stable window 60 s, panic window 6 s (10%), linear averaging; target = 70% of the per-pod concurrency
  (`container-concurrency-target-percentage`; the per-pod concurrency is swept).
- `dspc = ceil(stable / target)`, `dppc = ceil(panic / target)`, both clamped to
  `[floor(ready / max-scale-down-rate 2), ceil(max-scale-up-rate 1000 × ready)]`, `ready = max(1, ready)`.
- Panic when `dppc / ready ≥ 200%`; it lasts until a full stable window has passed below the threshold;
  while panicking the count never decreases. Scale-down-delay 0; min-scale from the scenario (1).
"""

from __future__ import annotations

import math
from collections import deque

from simulations.autoscalers.base import Context

TICK_SECONDS = 2.0
SCRAPE_SECONDS = 1.0


class Kpa:
    name = "kpa"

    def __init__(self, container_concurrency: float, target_percentage: float = 70.0,
                 stable_window_seconds: float = 60.0, panic_window_percentage: float = 10.0,
                 panic_threshold_percentage: float = 200.0, max_scale_up_rate: float = 1000.0,
                 max_scale_down_rate: float = 2.0):
        if not container_concurrency > 0:
            raise ValueError("the KPA concurrency must be > 0")
        self.target = container_concurrency * target_percentage / 100.0
        self.stable_window = stable_window_seconds
        self.panic_window = stable_window_seconds * panic_window_percentage / 100.0
        self.panic_threshold = panic_threshold_percentage / 100.0
        self.max_up, self.max_down = max_scale_up_rate, max_scale_down_rate
        self.interval_seconds = SCRAPE_SECONDS  # scrape each second; decide every TICK_SECONDS
        self._samples: deque[tuple[float, float]] = deque()
        self.panic_time: float | None = None
        self.max_panic_pods = 0
        self._next_decision = 0.0

    def initial_replicas(self, default: int) -> int:
        return default

    def observe(self, now: float, concurrency: float) -> None:
        self._samples.append((now, concurrency))
        while self._samples and self._samples[0][0] <= now - self.stable_window:
            self._samples.popleft()

    def _average(self, now: float, window: float) -> float | None:
        vals = [c for t, c in self._samples if t > now - window]
        return sum(vals) / len(vals) if vals else None

    def decide(self, now: float, ready: int) -> int | None:
        stable = self._average(now, self.stable_window)
        panic = self._average(now, self.panic_window)
        if stable is None or panic is None:
            return None  # ErrNoData: no decision
        ready_pods = max(1, ready)
        lo = math.floor(ready_pods / self.max_down)
        hi = math.ceil(self.max_up * ready_pods)
        dspc = min(hi, max(lo, math.ceil(stable / self.target - 1e-9)))
        dppc = min(hi, max(lo, math.ceil(panic / self.target - 1e-9)))
        over = dppc / ready_pods >= self.panic_threshold
        if over:
            self.panic_time = now
        elif self.panic_time is not None and self.panic_time + self.stable_window < now:
            self.panic_time, self.max_panic_pods = None, 0
        desired = dspc
        if self.panic_time is not None:
            desired = max(desired, dppc)
            if desired > self.max_panic_pods:
                self.max_panic_pods = desired
            else:
                desired = self.max_panic_pods
        return desired

    @property
    def panicking(self) -> bool:
        return self.panic_time is not None

    def tick(self, now: float, ctx: Context) -> int | None:
        self.observe(now, float(ctx.fleet.in_flight))
        if now + 1e-9 < self._next_decision:
            return None
        self._next_decision = now + TICK_SECONDS
        d = self.decide(now, ctx.fleet.ready_replicas)
        return None if d is None else max(ctx.min_replicas, min(ctx.max_replicas, d))
