"""Cumulative latency histograms (Prometheus `le` buckets): building them from raw bucket counts, and
their quantiles computed as Prometheus's `histogram_quantile` does.

Shared by the Prometheus source (bucket increases from one batched query), the direct-scrape source
(bucket deltas between scrapes), the backtest (range queries) and tests that check those paths against
ground truth, so every side builds and interpolates identically.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache

from autoscaler.core.signals import LatencyHistogram


@lru_cache(maxsize=4096)  # a few dozen distinct bounds, read once per model and bucket every tick
def parse_le(raw: str | None) -> float | None:
    """A bucket's `le` label as a float ("+Inf" is infinity), or None when absent or not a number."""
    if raw is None:
        return None
    try:
        le = float(raw)
    except ValueError:
        return None
    return None if le != le else le


def coalesce(buckets: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Buckets sorted by upper bound, counts of equal bounds summed (`le="1"` and `le="1.0"` are one
    bucket), as Prometheus's histogram_quantile does before interpolating."""
    merged: dict[float, float] = {}
    for u, c in buckets:
        u = float(u)
        merged[u] = merged.get(u, 0.0) + float(c)
    return sorted(merged.items())


def latency_histogram(buckets: Iterable[tuple[float, float]], age_seconds: float) -> LatencyHistogram | None:
    """A `LatencyHistogram` from cumulative `(upper_bound, count)` buckets in any order, or None when
    they cannot be one: no +Inf bucket (the total is unknown), a NaN/infinite/negative count, or a NaN
    bound. Counts that decrease with the bound (series extrapolated or scraped apart) are raised to the
    running maximum, as histogram_quantile does. Zero observations is a valid histogram (total 0)."""
    bs = coalesce(buckets)
    if not bs or bs[-1][0] != math.inf or any(u != u for u, _ in bs):
        return None
    bounds: list[float] = []
    counts: list[float] = []
    running = 0.0
    for u, c in bs:
        if not math.isfinite(c) or c < 0:
            return None
        running = max(running, c)
        bounds.append(u)
        counts.append(running)
    return LatencyHistogram(tuple(bounds), tuple(counts), age_seconds)


def histogram_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """The q-quantile of cumulative `(upper_bound, count)` buckets, or None where Prometheus gives NaN
    (no +Inf bucket, no observations, fewer than two buckets, or q outside [0, 1]).

    Linear interpolation inside the bucket holding the rank; the first bucket starts at 0 (unless its
    bound is ≤ 0); a rank in the +Inf bucket answers the largest finite bound. Buckets with equal bounds
    are summed and counts that decrease with the bound (a scrape torn between updates) are raised to the
    running maximum, like Prometheus. The arithmetic follows Prometheus's `bucketQuantile` operation by
    operation, so the same bucket counts give the same float.
    """
    if not 0.0 <= q <= 1.0 or q != q:
        return None
    bs = coalesce(buckets)
    if len(bs) < 2 or bs[-1][0] != math.inf:
        return None
    fixed: list[tuple[float, float]] = []
    running = 0.0
    for u, c in bs:
        if c != c or c < 0:
            return None
        running = max(running, c)
        fixed.append((u, running))
    total = fixed[-1][1]
    if total <= 0:
        return None
    rank = q * total
    b = next(i for i, (_, c) in enumerate(fixed) if c >= rank)
    if b == len(fixed) - 1:
        return fixed[-2][0]
    upper, count = fixed[b]
    if b == 0 and upper <= 0:
        return upper
    lower, before = (0.0, 0.0) if b == 0 else fixed[b - 1]
    if count == before:
        return upper
    return lower + (upper - lower) * ((rank - before) / (count - before))


def quantile_of(q: float, h: LatencyHistogram) -> float | None:
    """`histogram_quantile(q, ...)` of a LatencyHistogram."""
    return histogram_quantile(q, zip(h.upper_bounds, h.cumulative_counts, strict=True))
