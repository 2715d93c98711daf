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

Misses below the error budget still say where the knee is coming: near saturation they grow steeply with
load. Before any bin is over, a Poisson fit of the pooled misses against log(load) (`trend_knee`) predicts
the load at which they reach TREND_SHARE of the budget, and the plan stays under it. A prior that
overstates the replica is thus contradicted while the fleet still holds the SLO, not by the first rise
that breaks it (docs/benchmarks.md, decision change L).

A knee in load per replica says how hot one replica may run, but what breaks the SLO under a steady load
that is well under a replica's throughput is a burst inside the rate window (a few clients sending many
long prompts at once), and that burst is met by the fleet's spare capacity in absolute terms, not per
replica. A knee found on a small fleet therefore overstates what a large fleet needs. So the learner also
keeps the mean fleet size of the windows that missed (`miss_fleet`), and `spread_knee` turns the knee into
the load per replica that leaves the same spare capacity at the current demand (decision change Z).

A bin is a knee only once its misses came in MIN_EPISODES episodes at least EPISODE_GAP_SECONDS apart. A
single burst charges several consecutive windows to the bin its replicas served, and the plan then stays
under that bin all day, so no later window tests it again; a load a replica cannot carry breaks the SLO each
time the fleet returns to it. Until a bin's misses recur they still count in the misses' trend, which is
fitted while no knee is found (docs/benchmarks.md, decision change AD).

Pure and small: at most one entry per bin, serialised as [bin, windows, requests, missed] rows, the windows
that missed as [windows, Σ ready replicas] (`fleet_to_list`), and the bins' miss episodes as [bin, episodes,
last miss] rows (`episodes_to_list`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass

from autoscaler.core.numbers import MAX_REQUESTS, finite_number

LOW, RATIO = 0.02, 1.08  # bin b covers loads [LOW * RATIO**b, LOW * RATIO**(b+1))
MAX_BIN = 120  # 0.02 × 1.08**120 ≈ 200 replica-equivalents per replica: far past any real load
MAX_WEIGHT = 40.0  # windows one bin remembers (older ones fade in proportion)
MIN_WINDOWS = 8.0  # a bin speaks only once it has seen this many windows (two minutes of 15-s ticks)
OVER_MARGIN = 0.5  # a bin is over once its misses exceed the error budget by half again (noise near it is not)
EXPLORE = 0.1  # with no bin over the knee, plan up to this much above the highest load seen to hold
# The trend: a fit speaks once TREND_MIN_BINS bins have spoken and TREND_MIN_MISSED requests missed in them
# (in two bins at least), and only for a rise with load at least two standard errors above none. It
# predicts the load at which misses reach TREND_SHARE of the error budget (half: the measured knee waits
# for half again over it; a prediction should err low), at most TREND_REACH past the highest bin seen.
TREND_MIN_BINS = 3
TREND_MIN_MISSED = 10.0
TREND_SHARE = 0.5
TREND_REACH = 1.5
_NEWTON_STEPS = 30
# A bin's misses are one episode while its missed windows come less than this apart: a burst's misses and the
# drain of its queue span a few minutes (decision change AD; 300 s and 1,200 s measured the same).
EPISODE_GAP_SECONDS = 600.0
MIN_EPISODES = 2  # a bin is a knee once its misses came in this many episodes
Episodes = tuple[tuple[int, int, float], ...]  # (bin, episodes up to MIN_EPISODES, time of its last missed window)


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
    miss_windows: float = 0.0  # windows in which requests missed (faded to MAX_WEIGHT)
    miss_ready: float = 0.0  # Σ ready replicas over those windows
    episodes: Episodes = ()  # per bin whose windows missed, ascending

    def observe(self, load: float, requests: float, missed: float, ready: float = 0.0,
                now: float | None = None) -> SloCapacity:
        """One clean window: load per ready replica, requests judged, requests that missed because of load,
        the ready replicas that carried it, and when (None: no clock, so each missed window is an episode)."""
        b = bin_of(load)
        # A window judges at most MAX_REQUESTS (a histogram's count of 1e308, or inf, would pool to inf and leave
        # a state no status can hold).
        if b is None or not 0 < requests < MAX_REQUESTS or not 0 <= missed <= requests:
            return self
        mw, mr = self.miss_windows, self.miss_ready
        if missed > 0 and ready > 0 and math.isfinite(ready):
            mw, mr = mw + 1.0, mr + ready
            if mw > MAX_WEIGHT:
                mw, mr = MAX_WEIGHT, mr * MAX_WEIGHT / mw
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
        return SloCapacity(tuple(out), mw, mr, _episode(self.episodes, b, now) if missed > 0 else self.episodes)

    def confirmed(self, b: int) -> bool:
        """Whether bin `b`'s misses came in MIN_EPISODES episodes (see EPISODE_GAP_SECONDS)."""
        return any(i == b and k >= MIN_EPISODES for i, k, _ in self.episodes)

    def miss_fleet(self) -> float | None:
        """The mean ready replicas of the windows whose requests missed, or None before any did."""
        return self.miss_ready / self.miss_windows if self.miss_windows >= 1.0 else None

    def knee(self, quantile: float) -> tuple[float | None, float | None]:
        """(load where the SLO stops holding or None, highest load seen to hold or None). A bin over the
        budget whose misses came in one episode is neither (`confirmed`)."""
        over = next((lower_edge(i) for i in self._over(quantile) if self.confirmed(i)), None)
        held = [lower_edge(i + 1) for i, n, r, m in self.bins
                if n >= MIN_WINDOWS and 1.0 - m / r >= quantile and (over is None or lower_edge(i) < over)]
        return over, (max(held) if held else None)

    def pending(self, quantile: float) -> float | None:
        """The lowest load bin over the budget whose misses came in one episode so far, under any knee (what
        a second episode would make the knee), or None."""
        for i in self._over(quantile):
            return None if self.confirmed(i) else lower_edge(i)
        return None

    def _over(self, quantile: float) -> Iterator[int]:
        """The bins whose pooled misses exceed the error budget by half again (OVER_MARGIN), ascending."""
        limit = quantile - OVER_MARGIN * (1.0 - quantile)
        return (i for i, n, r, m in self.bins if n >= MIN_WINDOWS and 1.0 - m / r < limit)

    def trend_knee(self, quantile: float) -> float | None:
        """The load at which the misses' rise with load reaches TREND_SHARE of the error budget, or None
        (too little evidence, no significant rise, or further than TREND_REACH past the highest bin seen).

        Misses in a bin are taken as Poisson with mean requests × exp(a + b·log(load)); (a, b) is the
        maximum-likelihood fit (Newton's method on two parameters, loads centred). The bins change only on
        a clean window, so the fit is cached on them: most ticks reuse it."""
        return _trend(self.bins, quantile)

    def limits(self, quantile: float) -> tuple[float | None, float | None, float | None]:
        """(knee, highest load seen to hold, trend): `knee`, and `trend_knee` only while no knee is found
        (a measured knee replaces the trend, so it is not fitted then)."""
        over, held = self.knee(quantile)
        return over, held, (self.trend_knee(quantile) if over is None else None)

    def per_replica(self, quantile: float, prior: float, lo: float, hi: float, explore: float = EXPLORE) -> float:
        """Work one replica carries at the SLO: the knee, or (none found yet) the prior, raised to `explore`
        above the highest load seen to hold (negative: that much below it) and kept under the misses'
        trend (`trend_knee`); always within [lo, hi]."""
        over, held, trend = self.limits(quantile)
        return plan_at(over, held, prior, lo, hi, explore, trend)

    def to_list(self) -> list[list[float]]:
        return [[i, round(n, 3), round(r, 3), round(m, 3)] for i, n, r, m in self.bins]

    def fleet_to_list(self) -> list[float]:
        return [round(self.miss_windows, 3), round(self.miss_ready, 3)]

    def episodes_to_list(self) -> list[list[float]]:
        return [[i, k, round(t, 3)] for i, k, t in self.episodes]

    def with_episodes(self, v: object) -> SloCapacity:
        """These bins with their miss episodes from `episodes_to_list()`; raises ValueError naming what is wrong.
        None (a state written before episodes were kept): every bin that missed counts as confirmed, so the
        knee it held stays."""
        if v is None:
            eps = tuple((i, MIN_EPISODES, 0.0) for i, _, _, m in self.bins if m > 0)
            return SloCapacity(self.bins, self.miss_windows, self.miss_ready, eps)
        if not isinstance(v, list):
            raise ValueError(f"expected a list of [bin, episodes, last miss], got {type(v).__name__}")
        seen: dict[int, tuple[int, float]] = {}
        for row in v:
            if not isinstance(row, list | tuple) or len(row) != 3 or not all(finite_number(x) for x in row):
                raise ValueError(f"each entry must be [bin, episodes, last miss] as finite numbers, got {row!r}")
            i, k, t = row
            if i != int(i) or not 0 <= i <= MAX_BIN or k != int(k) or not 1 <= k <= MIN_EPISODES:
                raise ValueError(f"need a whole bin in 0..{MAX_BIN} and whole episodes in 1..{MIN_EPISODES}, "
                                 f"got {row!r}")
            seen[int(i)] = (int(k), float(t))
        eps = tuple((i, k, t) for i, (k, t) in sorted(seen.items()))
        return SloCapacity(self.bins, self.miss_windows, self.miss_ready, eps)

    def with_fleet(self, v: object) -> SloCapacity:
        """These bins with the windows that missed from `fleet_to_list()` (None: none yet); raises ValueError
        naming what is wrong."""
        if v is None:
            return SloCapacity(self.bins, episodes=self.episodes)
        if not isinstance(v, list | tuple) or len(v) != 2 or not all(finite_number(x) for x in v):
            raise ValueError(f"expected [windows, Σ ready replicas] as two finite numbers, got {v!r}")
        mw, mr = float(v[0]), float(v[1])
        if not (0 <= mw <= MAX_WEIGHT and mr >= 0):
            raise ValueError(f"need 0 ≤ windows ≤ {MAX_WEIGHT:g} and Σ ready ≥ 0, got {v!r}")
        return SloCapacity(self.bins, mw, mr, self.episodes)

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
            if not finite_number(i) or i != int(i) or not 0 <= i <= MAX_BIN:
                raise ValueError(f"bin must be a whole number in 0..{MAX_BIN}, got {i!r}")
            for x in (n, r, m):
                if not finite_number(x):
                    raise ValueError(f"windows, requests and missed must be finite numbers, got {x!r}")
            if not (0 < n <= MAX_WEIGHT and 0 <= m <= r and r > 0):
                raise ValueError(f"need 0 < windows ≤ {MAX_WEIGHT:g} and 0 ≤ missed ≤ requests > 0, got {row!r}")
            seen[int(i)] = (float(n), float(r), float(m))
        return SloCapacity(tuple((i, n, r, m) for i, (n, r, m) in sorted(seen.items())))


def _episode(episodes: Episodes, b: int, now: float | None) -> Episodes:
    """`episodes` after a missed window in bin `b` at `now`: a new episode once EPISODE_GAP_SECONDS passed
    since the bin's last missed window (with no clock, or one that went backwards, each window is one),
    counted up to MIN_EPISODES."""
    t = 0.0 if now is None else now
    out = [e for e in episodes if e[0] != b]
    last = next((e for e in episodes if e[0] == b), None)
    if last is None:
        k = 1
    else:
        new = now is None or not 0.0 <= now - last[2] <= EPISODE_GAP_SECONDS
        k = min(MIN_EPISODES, last[1] + (1 if new else 0))
    return tuple(sorted((*out, (b, k, t))))


def plan_at(over: float | None, held: float | None, prior: float, lo: float, hi: float, explore: float,
            trend: float | None = None) -> float:
    """`SloCapacity.per_replica` from a knee already found (`SloCapacity.knee`, `SloCapacity.trend_knee`)."""
    value = prior if held is None else max(prior, held * (1.0 + explore))
    if trend is not None:
        value = min(value, trend)
    if over is not None:
        value = over
    return min(hi, max(lo, value))


def spread_knee(knee: float | None, fleet: float | None, throughput: float | None, offered: float) -> float | None:
    """The load per replica at which a fleet carrying `offered` keeps the spare capacity the fleet the
    misses were seen on (`fleet` replicas, `SloCapacity.miss_fleet`) had at `knee`: never under `knee`, never
    past `throughput` (where a steady load starts to queue: the engine's knee). `knee` as it is when any is
    unknown or `throughput` is not past it.

    At the knee the fleet kept `fleet × (throughput − knee)` of its steady throughput spare for what arrives
    inside a rate window. A larger demand met with that same spare needs `(offered + spare) ÷ throughput`
    replicas, each carrying more than `knee`. Traced on servegen-mid's day 7: the misses' trend, fitted at
    0.41-0.43 of the prior from windows that missed on 8.6 replicas on average, held a fleet of 25-38 for the
    day, while the engine's knee was 0.60-0.67 and a static fleet of 17 met 99% (docs/benchmarks.md, decision
    change Z). A demand under the one the knee was found at keeps the knee: fewer replicas would leave less
    spare, but the knee was learned there, and holding it both ways cost more on the replays than it bought."""
    if knee is None or fleet is None or throughput is None or not throughput > knee or not offered > 0:
        return knee
    spare = fleet * (throughput - knee)
    return max(knee, offered * throughput / (offered + spare))


@functools.lru_cache(maxsize=256)
def _trend(bins: tuple[tuple[int, float, float, float], ...], quantile: float) -> float | None:
    """`SloCapacity.trend_knee` of these bins (pure, so cached on them)."""
    rows = [(math.log(lower_edge(i) * math.sqrt(RATIO)), r, m) for i, n, r, m in bins if n >= MIN_WINDOWS]
    if (len(rows) < TREND_MIN_BINS or sum(m for _, _, m in rows) < TREND_MIN_MISSED
            or sum(1 for _, _, m in rows if m > 0) < 2):
        return None
    mean_x = sum(x for x, _, _ in rows) / len(rows)
    pts = [(x - mean_x, r, m) for x, r, m in rows]
    a, b = math.log(sum(m for _, _, m in pts) / sum(r for _, r, _ in pts)), 0.0
    for _ in range(_NEWTON_STEPS):
        fit = _poisson_step(pts, a, b)
        if fit is None:
            return None
        da, db, _ = fit
        a, b = a + da, b + db
        if max(abs(da), abs(db)) < 1e-7:
            break
    else:
        return None  # no convergence: no fit to trust
    fit = _poisson_step(pts, a, b)
    if fit is None or not math.isfinite(b) or not b > 2.0 * math.sqrt(fit[2]):
        return None
    x = (math.log(TREND_SHARE * (1.0 - quantile)) - a) / b + mean_x
    if x > max(x for x, _, _ in rows) + math.log(TREND_REACH):
        return None
    return max(LOW, math.exp(x))  # far under every bin seen (misses over half the budget everywhere): LOW


def _poisson_step(pts: list[tuple[float, float, float]], a: float, b: float) -> tuple[float, float, float] | None:
    """One Newton step (da, db) of the Poisson log-likelihood at (a, b), and the variance of b there."""
    s0 = s1 = s2 = g0 = g1 = 0.0
    for x, r, m in pts:
        mu = r * math.exp(max(-50.0, min(50.0, a + b * x)))
        s0, s1, s2 = s0 + mu, s1 + mu * x, s2 + mu * x * x
        g0, g1 = g0 + m - mu, g1 + (m - mu) * x
    det = s0 * s2 - s1 * s1
    if not det > 0 or not math.isfinite(det):
        return None
    return (s2 * g0 - s1 * g1) / det, (s0 * g1 - s1 * g0) / det, s0 / det
