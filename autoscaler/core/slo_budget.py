"""The SLO's error budget over hours, scale-ups and bursts included: may capacity learning explore upward?

The capacity at the SLO (slo_capacity.py) is learned from settled windows only, and with no load bin over
the knee it explores: it plans a little above the highest load seen to hold, so a fleet learns it can run
hotter. Settled windows never show the misses that come while demand rises faster than replicas start, and
those grow as the fleet runs hotter (less headroom for a rise). So the exploration asks the whole SLO first:
the share of every judged request that missed (every tick with a fresh histogram, starts included, weighted
by the share of the rate window the tick covers, faded with a half-life of HALF_LIFE_SECONDS), against the
error budget 1 − quantile (its burn: 1 = on budget).
- burn unknown (fewer than MIN_JUDGED requests judged yet) or under half the budget: explore as before;
- between half and the whole budget: hold at the highest load seen to hold;
- over budget: plan EXPLORE below it.
The knee, once found, still wins: this only changes how far past the evidence the plan may go.
The same burn gates the SLO feedback's response to misses while replicas start (stages/slo_feedback.py):
they raise the load factor only while it is at 2 or more, and the factor relaxes only under half. The
headroom they bought (a factor over 1) is let go once the burning has stopped: the same counts are also kept
faded RECENT_SHARE as long (`recent_burn`), as the multiwindow burn-rate alerts of the Google SRE Workbook
pair a long window with one a twelfth of it so that an alert ends soon after its burn does (docs/benchmarks.md,
decision change AG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoscaler.core.numbers import MAX_REQUESTS, finite_number

HALF_LIFE_SECONDS = 2 * 3600.0
MIN_JUDGED = 2000.0  # requests before the burn speaks: a 1% budget is then 20 misses
MAX_JUDGED = MAX_REQUESTS  # bounds a window's requests and a restored state
# The recent counts fade this share of the half-life (10 minutes) and speak after this share of MIN_JUDGED.
RECENT_SHARE = 1.0 / 12.0


@dataclass(frozen=True, slots=True)
class SloBudget:
    judged: float = 0.0  # requests judged, faded
    missed: float = 0.0  # of those, the ones that missed the SLO, faded
    recent_judged: float = 0.0  # the same, faded RECENT_SHARE as long
    recent_missed: float = 0.0

    def observe(self, attained: float | None, requests: float, seconds: float, window_seconds: float) -> SloBudget:
        """After `seconds` more: fade, then add the share of the window's requests those seconds cover
        (`window_seconds`: the span the latency histograms were taken over; `attained`: their SLO share,
        None when the window was not judged)."""
        if not seconds > 0 or not math.isfinite(seconds):
            return self
        w = missed = 0.0
        if attained is not None and 0.0 <= attained <= 1.0 and 0 < requests < MAX_JUDGED:
            share = seconds / window_seconds if 0.0 < window_seconds < math.inf else 1.0
            w = min(1.0, share) * requests
            missed = w * (1.0 - attained)
        fade = math.exp(-seconds * math.log(2.0) / HALF_LIFE_SECONDS)
        recent = math.exp(-seconds * math.log(2.0) / (HALF_LIFE_SECONDS * RECENT_SHARE))
        return SloBudget(min(self.judged * fade + w, MAX_JUDGED), min(self.missed * fade + missed, MAX_JUDGED),
                         min(self.recent_judged * recent + w, MAX_JUDGED),
                         min(self.recent_missed * recent + missed, MAX_JUDGED))

    def burn(self, quantile: float) -> float | None:
        """Missed share over the error budget (1 − quantile); None until MIN_JUDGED requests were judged."""
        return _burn(self.judged, self.missed, MIN_JUDGED, quantile)

    def recent_burn(self, quantile: float) -> float | None:
        """`burn` over the last minutes (RECENT_SHARE of the half-life); None until RECENT_SHARE of
        MIN_JUDGED requests were judged in them."""
        return _burn(self.recent_judged, self.recent_missed, MIN_JUDGED * RECENT_SHARE, quantile)

    def explore(self, quantile: float, share: float) -> float:
        """How far above the highest load seen to hold capacity may be planned (negative: below it)."""
        burn = self.burn(quantile)
        if burn is None or burn < 0.5:
            return share
        return 0.0 if burn <= 1.0 else -share

    def to_list(self) -> list[float]:
        return [round(x, 3) for x in (self.judged, self.missed, self.recent_judged, self.recent_missed)]

    @staticmethod
    def from_list(v: object) -> SloBudget:
        """From `to_list()` (or the [judged, missed] an older controller stored: the recent counts then start
        empty); raises ValueError naming what is wrong."""
        if v is None:
            return SloBudget()
        if not isinstance(v, list | tuple) or len(v) not in (2, 4):
            raise ValueError("expected [judged, missed, recentJudged, recentMissed] (or an older [judged, missed])")
        for x in v:
            if not finite_number(x):
                raise ValueError(f"judged and missed must be finite numbers, got {x!r}")
        counts = [float(x) for x in v]
        for judged, missed in zip(counts[::2], counts[1::2], strict=True):
            if not 0 <= missed <= judged <= MAX_JUDGED:
                raise ValueError(f"need 0 ≤ missed ≤ judged ≤ {MAX_JUDGED:g}, got {list(v)!r}")
        return SloBudget(*counts)


def _burn(judged: float, missed: float, least: float, quantile: float) -> float | None:
    if judged < least:
        return None
    return missed / judged / max(1e-6, 1.0 - quantile)
