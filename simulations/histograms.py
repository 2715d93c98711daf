"""Histograms with vLLM's bucket boundaries (docs/engine-metrics.md §1.3).

Counts are kept per bucket (not cumulative); `cumulative()` gives Prometheus `le` buckets, the last
one being `+Inf`.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

# vllm:time_to_first_token_seconds
TTFT_BUCKETS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
    80.0, 160.0, 640.0, 2560.0,
)
# vllm:inter_token_latency_seconds
ITL_BUCKETS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)
# request_latency_buckets: vllm:e2e_request_latency_seconds, vllm:request_queue_time_seconds, ...
REQUEST_LATENCY_BUCKETS: tuple[float, ...] = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
    960.0, 1920.0, 7680.0,
)



def build_1_2_5_buckets(max_value: int) -> tuple[float, ...]:
    """vLLM's `build_1_2_5_buckets`: 1, 2, 5, 10, 20, 50, ... while ≤ `max_value` (vllm/v1/metrics/loggers.py)."""
    out: list[float] = []
    scale = 1
    while True:
        for m in (1, 2, 5):
            if m * scale > max_value:
                return tuple(out)
            out.append(float(m * scale))
        scale *= 10


# vllm:request_prompt_tokens: build_1_2_5_buckets(max_model_len); Llama-3.1-8B's max_model_len is 131,072
PROMPT_TOKEN_BUCKETS: tuple[float, ...] = build_1_2_5_buckets(131_072)


class Histogram:
    """A Prometheus-style histogram: per-bucket counts (last = +Inf), sum and count."""

    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]):
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float, n: int = 1) -> None:
        # `le` semantics: a value equal to a bound falls in that bucket.
        self.counts[bisect_left(self.bounds, value)] += n
        self.sum += value * n
        self.count += n

    def snapshot(self) -> HistogramSnapshot:
        return HistogramSnapshot(self.bounds, tuple(self.counts), self.sum, self.count)


@dataclass(frozen=True, slots=True)
class HistogramSnapshot:
    bounds: tuple[float, ...]
    counts: tuple[int, ...]  # per bucket, len(bounds) + 1, the last is the +Inf overflow
    sum: float
    count: int

    def cumulative(self) -> tuple[int, ...]:
        """Counts for `le=bound` for each bound and then `le=+Inf` (== count)."""
        out, acc = [], 0
        for c in self.counts:
            acc += c
            out.append(acc)
        return tuple(out)


def quantile_from_counts(q: float, bounds: tuple[float, ...], counts: list[float] | tuple[float, ...]) -> float | None:
    """PromQL `histogram_quantile` on per-bucket counts (e.g. increases over a window).

    Linear interpolation inside the bucket, lower bound 0 for the first; a quantile in the +Inf bucket
    returns the highest finite bound, as Prometheus does. None when there is nothing observed.
    """
    total = sum(counts)
    if total <= 0:
        return None
    rank = q * total
    acc = 0.0
    for i, c in enumerate(counts):
        if acc + c >= rank and c > 0:
            if i >= len(bounds):
                return bounds[-1]
            lo = bounds[i - 1] if i > 0 else 0.0
            return lo + (bounds[i] - lo) * (rank - acc) / c
        acc += c
    return bounds[-1]
