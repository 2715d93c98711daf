"""The engine's own evidence of where the SLO's knee lies, read at loads well below it.

Misses say where a replica stops holding the SLO only once the fleet gets there; a fleet planned with a
margin rarely does. Two things an engine reports at every load level say where it would:

- **How its batch grows.** By Little's law a replica runs `n = λ·T` sequences. A continuous-batching
  engine's step slows as the batch grows, so T grows with n, and n climbs like `c·L / (C − L)` (a
  processor-sharing server) as the load L nears the throughput C the replica saturates at. A weighted
  least-squares line of 1/n against 1/L over the load bins gives C and c. The batch cannot grow past what
  the KV cache holds (n ÷ KV use, or `capacity.maxConcurrency` when lower): the queue begins at
  `C · n_max / (n_max + c)`, the load at which the mean batch reaches that size.
- **How the latency the SLO measures grows.** The SLO's own quantile of each clean window's latency
  histogram (TTFT, or queue time), averaged as a logarithm per load bin and fitted as a line in load,
  reaches the SLO at some load. With long prompts this comes first: prefill competes for the step's token
  budget long before the batch saturates. The line is fitted over the highest bins only (those within
  LOCAL_SPAN of the highest load that spoke), when they are enough to fit: a queue's latency is convex in
  load (flat while prefill dominates, then a hockey stick), so a line through the flat low loads
  understates the rise near the knee and puts the knee too far, often past the reach (docs/benchmarks.md,
  decision change AA).

The knee is the lower of the two. Both are fitted only once three bins spanning a quarter in load have
spoken, and each only when its slope says what it should (n rising with load, the quantile rising with
load): otherwise None, and the plan keeps its prior. Bins fade as the SLO bins do (MAX_WEIGHT windows).
A fit is trusted only up to REACH past the highest bin that spoke: a knee it puts further is no knee
(`knee`), and a knee the misses found is explored, spread or refused only against a knee within the reach.
To lift the prior's share it is read at the reach (`lift`, decision change AE): read as none, it left an
understated prior where it was. On servegen-large-cold with every prior ×0.7 the fits put the knee past
1.5× the loads the prior's plan kept all day, and the plan stayed at the prior's share (0.8). Read at the
reach from minute 45 (0.63, rising to 0.92 as the lifted plan's loads spoke), it lifts the plan; from
minute 90 the fits place the knee within their reach (0.84-0.99) and the plan runs at 0.86-1.10.

How the plan uses it (stages/capacity.py, decision changes V and W in docs/benchmarks.md): 15% past the
knee (where the learner settles when the prior is right) lifts the prior's share of the SLO when higher,
so a prior that understates the replica is corrected from the first hours' moderate loads, which the
margins keep far under the prior (exploring from the highest load seen to hold never got there). A knee
that lift leaves below the share is left to the misses (the SLO bins' knee and their
trend): those see the bursts inside a rate window that a steady-state fit does not, and planning at the
engine's knee both ways cost more where the prior's share had held (tried; docs/benchmarks.md).

Checked against the simulator's engine (vLLM V1's scheduler with a step cost linear in batched tokens),
where both fits land within a few percent of the knee the misses show. An engine whose step time stays
flat as the batch grows (memory-bound decoding at small batches) shows n rising only in proportion to load:
no knee from the batch, the prior stands.

Pure and small: one row per bin, serialised as [bin, windows, Σ1/n, quantile windows, Σ log quantile],
beside the faded windows and sum of n ÷ KV use.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from autoscaler.core.numbers import finite_number
from autoscaler.core.slo_capacity import LOW, MAX_BIN, MAX_WEIGHT, MIN_WINDOWS, RATIO, bin_of

MIN_BINS = 3
MIN_SPAN = 1.25  # the bins fitted span at least this ratio of loads
MIN_KV = 0.05  # KV use under this says too little of what a sequence holds
REACH = 1.5  # a knee is trusted at most this far past the highest bin seen (`lift` reads one further here)
MAX_SEQUENCES = 1e6
# The latency's line is fitted over the bins within this ratio of the highest load that spoke (when they are
# MIN_BINS spanning MIN_SPAN): the rise near the knee, not the flat loads far under it. On servegen-mid's
# day 11 the SLO's quantile was 18% of the SLO at 0.36, 42% at 0.42 and 86% at 0.45 of the prior; the line
# over every bin put the knee at 0.75, past the reach; the top bins put it at 0.47-0.51 all afternoon.
LOCAL_SPAN = 1.5


@dataclass(frozen=True, slots=True)
class EngineKnee:
    """Per load bin, ascending: (bin, windows, Σ 1/n, windows with a quantile, Σ log quantile); and the
    faded windows and Σ (sequences per replica ÷ KV use)."""

    bins: tuple[tuple[int, float, float, float, float], ...] = ()
    kv_windows: float = 0.0
    kv_sum: float = 0.0

    def observe(self, load: float, running: float | None, latency: float | None, kv: float | None) -> EngineKnee:
        """One clean window: the load per ready replica, sequences running per ready replica, the window's
        latency at the SLO's quantile as a share of the SLO (1: at it), the mean KV use (0..1); None where
        unknown."""
        b = bin_of(load)
        if b is None or running is None or not 0 < running <= MAX_SEQUENCES:
            return self
        lq = math.log(latency) if latency is not None and 0 < latency < math.inf else None
        out, done = [], False
        for i, n, s, qn, qs in self.bins:
            if i == b:
                n, s, done = n + 1.0, s + 1.0 / running, True
                if lq is not None:
                    qn, qs = qn + 1.0, qs + lq
                if n > MAX_WEIGHT:
                    n, s = MAX_WEIGHT, s * MAX_WEIGHT / n
                if qn > MAX_WEIGHT:
                    qn, qs = MAX_WEIGHT, qs * MAX_WEIGHT / qn
            out.append((i, n, s, qn, qs))
        if not done:
            out.append((b, 1.0, 1.0 / running, 1.0 if lq is not None else 0.0, lq or 0.0))
            out.sort()
        kn, ks = self.kv_windows, self.kv_sum
        if kv is not None and MIN_KV <= kv <= 1.0:
            kn, ks = kn + 1.0, ks + running / kv
            if kn > MAX_WEIGHT:
                kn, ks = MAX_WEIGHT, ks * MAX_WEIGHT / kn
        return EngineKnee(tuple(out), kn, ks)

    def knee(self, max_concurrency: int | None) -> float | None:
        """The load per replica at which the SLO would stop holding, or None (too little evidence, or past the
        reach)."""
        return self.readings(max_concurrency)[0]

    def lift(self, max_concurrency: int | None) -> float | None:
        """`knee`, or the reach when the fits put the knee past it: the furthest they are trusted, which is
        how far an understated prior may be lifted by them (stages/capacity.lifted_share). Not a bound the
        evidence proves: early in a day a few bins can put it above where more bins later put the knee."""
        return self.readings(max_concurrency)[1]

    def readings(self, max_concurrency: int | None) -> tuple[float | None, float | None]:
        """(`knee`, `lift`) from one fit: the capacity stage reads both every tick."""
        fit = _knee(self.bins, self.kv_windows, self.kv_sum, max_concurrency)
        if fit is None:
            return None, None
        k, reach = fit
        return (k if k <= reach else None), min(k, reach)

    def to_dict(self) -> dict[str, object]:
        # The sums of 1/n and n/KV are kept to 7 significant digits, not decimal places: a batch of thousands
        # (1/n ~ 1e-4) or of a fraction of a sequence (n/KV ~ 0.02) lost 0.1% of its knee to a fixed rounding.
        return {"bins": [[i, round(n, 3), _sig(s), round(qn, 3), round(qs, 4)] for i, n, s, qn, qs in self.bins],
                "kvWindows": round(self.kv_windows, 3), "kvSum": _sig(self.kv_sum)}

    @staticmethod
    def from_dict(v: object) -> EngineKnee:
        """From `to_dict()`; raises ValueError naming what is wrong."""
        if v is None:
            return EngineKnee()
        if not isinstance(v, dict):
            raise ValueError(f"expected a mapping with bins, kvWindows and kvSum, got {type(v).__name__}")
        kn, ks = v.get("kvWindows", 0.0), v.get("kvSum", 0.0)
        for x in (kn, ks):
            if not finite_number(x):
                raise ValueError(f"kvWindows and kvSum must be finite numbers, got {x!r}")
        if not (0 <= kn <= MAX_WEIGHT and ks >= 0):
            raise ValueError(f"need 0 ≤ kvWindows ≤ {MAX_WEIGHT:g} and kvSum ≥ 0, got {kn!r}, {ks!r}")
        rows = v.get("bins") or []
        if not isinstance(rows, list):
            raise ValueError(f"bins: expected a list, got {type(rows).__name__}")
        seen: dict[int, tuple[float, float, float, float]] = {}
        for row in rows:
            if not isinstance(row, list | tuple) or len(row) != 5:
                raise ValueError("each bin must be [bin, windows, Σ1/n, quantile windows, Σlog quantile]")
            for x in row:
                if not finite_number(x):
                    raise ValueError(f"bin entries must be finite numbers, got {x!r}")
            i, n, s, qn, qs = row
            if i != int(i) or not 0 <= i <= MAX_BIN:
                raise ValueError(f"bin must be a whole number in 0..{MAX_BIN}, got {i!r}")
            if not (0 < n <= MAX_WEIGHT and s > 0 and 0 <= qn <= MAX_WEIGHT):
                raise ValueError(f"need 0 < windows ≤ {MAX_WEIGHT:g}, Σ1/n > 0 and 0 ≤ quantile windows ≤ "
                                 f"{MAX_WEIGHT:g}, got {row!r}")
            seen[int(i)] = (float(n), float(s), float(qn), float(qs))
        return EngineKnee(tuple((i, *r) for i, r in sorted(seen.items())), float(kn), float(ks))


def _fit(points: list[tuple[float, float, float]]) -> tuple[float, float] | None:
    """Weighted least squares y = a + b·x over (x, y, weight): (a, b), or None when degenerate."""
    w = sum(p[2] for p in points)
    mx = sum(p[0] * p[2] for p in points) / w
    my = sum(p[1] * p[2] for p in points) / w
    sxx = sum(p[2] * (p[0] - mx) ** 2 for p in points)
    if not sxx > 0:
        return None
    b = sum(p[2] * (p[0] - mx) * (p[1] - my) for p in points) / sxx
    return my - b * mx, b


def _spoken(rows: list[tuple[float, float, float]]) -> bool:
    return len(rows) >= MIN_BINS and max(r[0] for r in rows) >= MIN_SPAN * min(r[0] for r in rows)


def _near_the_top(rows: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """The rows within LOCAL_SPAN of the highest load, when they are enough to fit (`_spoken`); else all."""
    top = max((r[0] for r in rows), default=0.0)
    near = [r for r in rows if r[0] * LOCAL_SPAN >= top]
    return near if _spoken(near) else rows


def _sig(x: float) -> float:
    """`x` to 7 significant digits, for the stored state."""
    return float(f"{x:.7g}")


@functools.lru_cache(maxsize=256)
def _knee(bins: tuple[tuple[int, float, float, float, float], ...], kv_windows: float, kv_sum: float,
          max_concurrency: int | None) -> tuple[float, float] | None:
    """(the knee the fits put, REACH past the highest bin that spoke), or None (no fit, or under LOW)."""
    mid = math.sqrt(RATIO)
    loads = [(LOW * RATIO**i * mid, n, s, qn, qs) for i, n, s, qn, qs in bins]
    knees = []
    batch = [(load, s / n, n) for load, n, s, _, _ in loads if n >= MIN_WINDOWS]
    if _spoken(batch):
        # n = c·L/(C − L), so 1/n = (C/c)·(1/L) − 1/c: the intercept a is −1/c, the slope b is C/c.
        fit = _fit([(1.0 / load, y, w) for load, y, w in batch])
        if fit is not None and fit[0] < 0 < fit[1]:
            a, b = fit
            throughput, c = -b / a, -1.0 / a
            n_max = kv_sum / kv_windows if kv_windows >= MIN_WINDOWS else math.inf
            if max_concurrency is not None:
                n_max = min(n_max, float(max_concurrency))
            knees.append(throughput * n_max / (n_max + c) if n_max < math.inf else throughput)
    latency = _near_the_top([(load, qs / qn, qn) for load, _, _, qn, qs in loads if qn >= MIN_WINDOWS])
    if _spoken(latency):
        fit = _fit(latency)
        # Over the SLO already at the lowest load fitted: not load (prefill alone), no knee from it.
        if fit is not None and fit[1] > 0 and fit[0] + fit[1] * min(x for x, _, _ in latency) < 0:
            knees.append(-fit[0] / fit[1])
    if not knees:
        return None
    top = max(load for load, n, _, qn, _ in loads if max(n, qn) >= MIN_WINDOWS)  # the highest bin that spoke
    k = min(knees)
    return (k, REACH * top) if k >= LOW else None
