"""Capacity at the SLO: the per-replica load at which the SLO still holds, learned at every load level.

Each clean tick (fresh metrics, nothing starting, the fleet at its desired size for a whole rate window)
gives one point: the work each ready replica carried (replica-equivalents at the prior), how many requests
the window judged and how many of them missed the SLO because of load. Points fall into log-spaced load
bins (8% wide); each bin pools its windows' requests and misses. The knee is the lower edge of the lowest
bin whose pooled misses exceed the SLO's error budget by half again (OVER_MARGIN: the attainment of one
minute of bursty traffic hovers around the target at any load, and that noise is no knee). With no bin over the knee
yet, the fleet explores: it may plan a little above the highest load at which the SLO was seen to hold, so
it learns it can run hotter instead of staying wherever the prior put it. Old evidence fades (each bin
keeps at most MAX_WEIGHT windows), so a changed token mix or engine is relearned.

Pure and small: at most one entry per bin, serialised as [bin, windows, requests, missed] rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

LOW, RATIO = 0.02, 1.08  # bin b covers loads [LOW * RATIO**b, LOW * RATIO**(b+1))
MAX_BIN = 120  # 0.02 × 1.08**120 ≈ 200 replica-equivalents per replica: far past any real load
MAX_WEIGHT = 40.0  # windows one bin remembers (older ones fade in proportion)
MIN_WINDOWS = 8.0  # a bin speaks only once it has seen this many windows (two minutes of 15-s ticks)
OVER_MARGIN = 0.5  # a bin is over once its misses exceed the error budget by half again (noise near it is not)
EXPLORE = 0.1  # with no bin over the knee, plan up to this much above the highest load seen to hold


def bin_of(load: float) -> int | None:
    if not load >= LOW or not math.isfinite(load):
        return None
    return min(MAX_BIN, int(math.log(load / LOW) / math.log(RATIO)))


def lower_edge(b: int) -> float:
    return LOW * RATIO**b


@dataclass(frozen=True, slots=True)
class SloCapacity:
    """Per load bin, ascending: (bin, windows, requests judged, requests that missed because of load)."""

    bins: tuple[tuple[int, float, float, float], ...] = ()

    def observe(self, load: float, requests: float, missed: float) -> SloCapacity:
        b = bin_of(load)
        if b is None or not requests > 0 or not 0 <= missed <= requests:
            return self
        out, done = [], False
        for i, n, r, m in self.bins:
            if i == b:
                n, r, m, done = n + 1.0, r + requests, m + missed, True
                if n > MAX_WEIGHT:
                    k = MAX_WEIGHT / n
                    n, r, m = MAX_WEIGHT, r * k, m * k
            out.append((i, n, r, m))
        if not done:
            out.append((b, 1.0, requests, missed))
            out.sort()
        return SloCapacity(tuple(out))

    def knee(self, quantile: float) -> tuple[float | None, float | None]:
        """(load where the SLO stops holding or None, highest load seen to hold or None)."""
        limit = quantile - OVER_MARGIN * (1.0 - quantile)
        over = next((lower_edge(i) for i, n, r, m in self.bins if n >= MIN_WINDOWS and 1.0 - m / r < limit), None)
        held = [lower_edge(i + 1) for i, n, r, m in self.bins
                if n >= MIN_WINDOWS and 1.0 - m / r >= quantile and (over is None or lower_edge(i) < over)]
        return over, (max(held) if held else None)

    def per_replica(self, quantile: float, prior: float, lo: float, hi: float, explore: float = EXPLORE) -> float:
        """Work one replica carries at the SLO: the knee, or (none found yet) the prior, raised to `explore`
        above the highest load seen to hold (negative: that much below it); always within [lo, hi]."""
        return plan_at(*self.knee(quantile), prior, lo, hi, explore)

    def to_list(self) -> list[list[float]]:
        return [[i, round(n, 3), round(r, 3), round(m, 3)] for i, n, r, m in self.bins]

    @staticmethod
    def from_list(v: object) -> SloCapacity:
        """From `to_list()`; raises ValueError naming what is wrong."""
        if v is None:
            return SloCapacity()
        if not isinstance(v, list):
            raise ValueError(f"expected a list of [bin, windows, requests, missed], got {type(v).__name__}")
        seen: dict[int, tuple[float, float, float]] = {}
        for row in v:
            if not isinstance(row, list | tuple) or len(row) != 4:
                raise ValueError("each entry must be [bin, windows, requests, missed]")
            i, n, r, m = row
            if isinstance(i, bool) or not isinstance(i, int | float) or i != int(i) or not 0 <= i <= MAX_BIN:
                raise ValueError(f"bin must be a whole number in 0..{MAX_BIN}, got {i!r}")
            for x in (n, r, m):
                if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
                    raise ValueError(f"windows, requests and missed must be finite numbers, got {x!r}")
            if not (0 < n <= MAX_WEIGHT and 0 <= m <= r and r > 0):
                raise ValueError(f"need 0 < windows ≤ {MAX_WEIGHT:g} and 0 ≤ missed ≤ requests > 0, got {row!r}")
            seen[int(i)] = (float(n), float(r), float(m))
        return SloCapacity(tuple((i, n, r, m) for i, (n, r, m) in sorted(seen.items())))


def plan_at(over: float | None, held: float | None, prior: float, lo: float, hi: float, explore: float) -> float:
    """`SloCapacity.per_replica` from a knee already found (`SloCapacity.knee`)."""
    value = prior if held is None else max(prior, held * (1.0 + explore))
    if over is not None:
        value = over
    return min(hi, max(lo, value))
