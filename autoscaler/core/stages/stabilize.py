"""Stabilize: scale down only to the highest recommendation over a window at least as long as a cold start.

With no remembered recommendation inside the window (first tick, a restart without state) the current
count counts as recommended all along: no scale-down until a whole window of evidence says so.
"""

from __future__ import annotations

from dataclasses import dataclass

History = tuple[tuple[float, int], ...]  # (time, replicas), oldest first


@dataclass(frozen=True, slots=True)
class Stabilized:
    value: int  # the highest recommendation in the window, this tick's included
    recommendations: History  # the window to remember, this tick's included


def since(pairs: History, start: float) -> History:
    """The entries at or after `start` (the history is oldest first)."""
    i = 0
    while i < len(pairs) and pairs[i][0] < start:
        i += 1
    return pairs[i:] if i else pairs


def stabilize(recommendations: History, now: float, window_seconds: float, current: int, raw: int) -> Stabilized:
    past = since(recommendations, now - window_seconds) if recommendations else ((now, current),)
    recs = (*past, (now, raw))
    return Stabilized(max(r for _, r in recs), recs)
