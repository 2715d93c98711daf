"""Stabilize: scale down only to the highest recommendation over a window at least as long as a cold start.

The window remembers the sustained part of each recommendation (the forecast's, the concurrency limit's,
the floor's); replicas ordered for this tick's queue (reactive, hedge) count in their own tick only, so
once the queue has drained they are released at the scale-down rate instead of being held for a whole
window: the forecast, which saw the burst, says whether demand stays.

With no remembered recommendation inside the window after a break in the ticks (first tick, a restart
without state, or state whose newest recommendation is older than the window and more than a few
intervals old: downtime, a clock jump, a tick that came very late) the current count counts as
recommended all along: no scale-down until a whole window of evidence says so. A window shorter than
the tick interval (a policy asking for one-tick stabilization) is no break: it is honoured as such.
Entries stamped later than now (the clock went backwards) count as made now: they hold for one more
window rather than forever, and the history stays ordered and bounded.
"""

from __future__ import annotations

from dataclasses import dataclass

History = tuple[tuple[float, int], ...]  # (time, replicas), oldest first


@dataclass(frozen=True, slots=True)
class Stabilized:
    value: int  # the highest recommendation in the window, this tick's included
    recommendations: History  # the window to remember, this tick's included

    def explain(self) -> dict[str, float]:
        return {"stabilized": self.value}


def since(pairs: History, start: float, now: float) -> History:
    """The entries at or after `start`, entries later than `now` moved to `now` (oldest first)."""
    i, n = 0, len(pairs)
    while i < n and not pairs[i][0] >= start:  # also drops NaN times
        i += 1
    kept = pairs[i:] if i else pairs
    if kept and not kept[-1][0] <= now:
        kept = tuple((min(t, now), r) for t, r in kept if t >= start)
    return kept


BREAK_INTERVALS = 4  # a gap longer than this many intervals since the newest recommendation is a break


def remember_max(pairs: History, t: float, value: int) -> History:
    """`pairs` with (t, value) appended, dropping entries that can never again be the maximum of a window
    ending now or later (an entry followed by one at least as high). Maxima are unchanged; the history
    stays as short as the distinct falling values in it, however long the window."""
    i = len(pairs)
    while i and pairs[i - 1][1] <= value:
        i -= 1
    return (*pairs[:i], (t, value))


def remember_extremes(pairs: History, t: float, value: int) -> History:
    """`pairs` with (t, value) appended, keeping only entries that can still be the minimum or the maximum
    of a period ending now or later (those below or above everything after them)."""
    kept, lo, hi = [(t, value)], value, value
    for entry in reversed(pairs):
        r = entry[1]
        if r < lo:
            lo = r
            kept.append(entry)
        elif r > hi:
            hi = r
            kept.append(entry)
    kept.reverse()
    return tuple(kept)


def stabilize(recommendations: History, now: float, window_seconds: float, interval_seconds: float, current: int,
              raw: int, held: int | None = None) -> Stabilized:
    """The highest recommendation in the window. `held` (default `raw`; never above it) is the part of this
    tick's recommendation the window remembers; the rest of `raw` counts for this tick only."""
    past = since(recommendations, now - window_seconds, now)
    if not past and not (recommendations and now - recommendations[-1][0] <= BREAK_INTERVALS * interval_seconds):
        past = ((now, current),)
    recs = remember_max(past, now, raw if held is None else min(raw, held))
    return Stabilized(max(raw, max(r for _, r in recs)), recs)
