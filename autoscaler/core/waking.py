"""A wake from zero in progress, as the core state keeps it (the stage that runs it: stages/zero.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Waking:
    """A wake in progress (kept in the core state): when the gateway's count was first read above its
    threshold (the sample's own time, `at`) and what it was (`count`), the arrival rate its growth since then
    implied while nothing was served (requests/s; None until a second count), when the first replica was ready
    and when the engines' queue first stood empty."""

    at: float
    count: float
    rate: float | None = None
    ready_at: float | None = None
    drained_at: float | None = None

    def to_list(self) -> list[float | None]:
        return [self.at, self.count, self.rate, self.ready_at, self.drained_at]
