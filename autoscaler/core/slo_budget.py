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
they raise the load factor only while it is at 2 or more, and the factor relaxes only under 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoscaler.core.numbers import finite_number

HALF_LIFE_SECONDS = 2 * 3600.0
MIN_JUDGED = 2000.0  # requests before the burn speaks: a 1% budget is then 20 misses
MAX_JUDGED = 1e12  # bounds a restored state


@dataclass(frozen=True, slots=True)
class SloBudget:
    judged: float = 0.0  # requests judged, faded
    missed: float = 0.0  # of those, the ones that missed the SLO, faded

    def observe(self, attained: float | None, requests: float, seconds: float, window_seconds: float) -> SloBudget:
        """After `seconds` more: fade, then add the share of the window's requests those seconds cover
        (`window_seconds`: the span the latency histograms were taken over; `attained`: their SLO share,
        None when the window was not judged)."""
        if not seconds > 0 or not math.isfinite(seconds):
            return self
        fade = math.exp(-seconds * math.log(2.0) / HALF_LIFE_SECONDS)
        judged, missed = self.judged * fade, self.missed * fade
        if attained is not None and 0.0 <= attained <= 1.0 and 0 < requests < MAX_JUDGED:
            share = seconds / window_seconds if 0.0 < window_seconds < math.inf else 1.0
            w = min(1.0, share) * requests
            judged, missed = judged + w, missed + w * (1.0 - attained)
        return SloBudget(min(judged, MAX_JUDGED), min(missed, MAX_JUDGED))

    def burn(self, quantile: float) -> float | None:
        """Missed share over the error budget (1 − quantile); None until MIN_JUDGED requests were judged."""
        if self.judged < MIN_JUDGED:
            return None
        return self.missed / self.judged / max(1e-6, 1.0 - quantile)

    def explore(self, quantile: float, share: float) -> float:
        """How far above the highest load seen to hold capacity may be planned (negative: below it)."""
        burn = self.burn(quantile)
        if burn is None or burn < 0.5:
            return share
        return 0.0 if burn <= 1.0 else -share

    def to_list(self) -> list[float]:
        return [round(self.judged, 3), round(self.missed, 3)]

    @staticmethod
    def from_list(v: object) -> SloBudget:
        """From `to_list()`; raises ValueError naming what is wrong."""
        if v is None:
            return SloBudget()
        if not isinstance(v, list | tuple) or len(v) != 2:
            raise ValueError("expected [judged, missed]")
        for x in v:
            if not finite_number(x):
                raise ValueError(f"judged and missed must be finite numbers, got {x!r}")
        judged, missed = float(v[0]), float(v[1])
        if not 0 <= missed <= judged <= MAX_JUDGED:
            raise ValueError(f"need 0 ≤ missed ≤ judged ≤ {MAX_JUDGED:g}, got {list(v)!r}")
        return SloBudget(judged, missed)
