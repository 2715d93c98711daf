"""A wake from zero in progress, as the core state keeps it (the stage that runs it: stages/zero.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Waking:
    """A wake in progress (kept in the core state): since when the gateway's count has been accumulating
    (`origin`: the last tick that showed it quiet), the arrival rate it implied while nothing was served
    (requests/s), when the first replica was ready and when the engines' queue first stood empty."""

    origin: float
    rate: float
    ready_at: float | None = None
    drained_at: float | None = None

    def to_list(self) -> list[float | None]:
        return [self.origin, self.rate, self.ready_at, self.drained_at]
