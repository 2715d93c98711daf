"""Quantiles from cumulative histogram buckets, computed as Prometheus's `histogram_quantile` does.

Shared by the direct-scrape source (bucket deltas between scrapes) and tests that check the Prometheus
path against ground truth, so both sides interpolate identically.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def histogram_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """The q-quantile of cumulative `(upper_bound, count)` buckets, or None where Prometheus gives NaN
    (no +Inf bucket, no observations, fewer than two buckets, or q outside [0, 1]).

    Linear interpolation inside the bucket holding the rank; the first bucket starts at 0 (unless its
    bound is ≤ 0); a rank in the +Inf bucket answers the largest finite bound. Counts that decrease
    with the bound (a scrape torn between updates) are raised to the running maximum, like Prometheus.
    """
    if not 0.0 <= q <= 1.0 or q != q:
        return None
    bs = sorted((float(u), float(c)) for u, c in buckets)
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
    return lower + (upper - lower) * (rank - before) / (count - before)
