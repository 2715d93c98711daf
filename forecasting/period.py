"""Season length detection: a periodogram proposes, autocorrelation at the candidate lag confirms.

Candidates are the declared ones (daily, weekly by default) plus the strongest periodogram peak. A candidate
is accepted when the series, after removing a moving average one period wide (which strips trend but keeps
the cycle), correlates with itself one period later (>= `min_correlation`) clearly more than half a period
later (random walks and slow trends correlate at every lag; cycles do not at half their length). Among
accepted candidates the best-correlated wins, but a multiple of a shorter accepted period must beat it by a
margin (a daily cycle also repeats weekly; we only call it weekly if the week adds something).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.ndimage import uniform_filter1d
from scipy.signal import find_peaks, periodogram

DEFAULT_CANDIDATES_SECONDS = (86400.0, 604800.0)
MULTIPLE_MARGIN = 0.05
HALF_PERIOD_MARGIN = 0.2
PEAK_PROMINENCE = 20.0  # a discovered peak must carry this many times the median spectral power
DISCOVERED_MIN_CYCLES = 4  # undeclared periods need more evidence than declared ones


def _fill_gaps(y: np.ndarray) -> np.ndarray:
    finite = np.isfinite(y)
    if finite.all():
        return y
    return np.where(finite, y, np.nanmean(y) if finite.any() else 0.0)


def _lag_correlation(r: np.ndarray, lag: int) -> float:
    a, b = r[:-lag], r[lag:]
    sa, sb = a.std(), b.std()
    if sa <= 1e-12 or sb <= 1e-12:
        return 0.0
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


def seasonal_correlation(y: np.ndarray, period_steps: int, detrend_steps: int | None = None) -> float:
    """How strongly the series, de-trended over `detrend_steps` (default one period), repeats after
    `period_steps`; 0 when it repeats no better than half a period later."""
    width = detrend_steps or period_steps
    trend = uniform_filter1d(y, size=width, mode="nearest")
    half = width // 2
    if len(y) > 2 * half + 1:  # where the window is not a whole cycle, hold the nearest full-cycle mean
        trend[:half] = trend[half]
        trend[len(y) - half :] = trend[len(y) - half - 1]
    r = y - trend
    full = _lag_correlation(r, period_steps)
    echo = _lag_correlation(r, max(1, period_steps // 2))
    return full if full - echo >= HALF_PERIOD_MARGIN else 0.0


def _periodogram_candidate(y: np.ndarray) -> int | None:
    """The period of the most prominent spectral peak of the differenced series (differencing whitens
    random-walk drift, whose power otherwise piles up at the lowest frequencies), if it stands out."""
    freqs, power = periodogram(np.diff(y), detrend="linear")
    if len(power) < 3:
        return None
    peaks, _ = find_peaks(power[1:])
    if len(peaks) == 0:
        return None
    best = int(peaks[np.argmax(power[1:][peaks])]) + 1
    if power[best] < PEAK_PROMINENCE * np.median(power[1:]) or freqs[best] <= 0:
        return None
    return round(1.0 / freqs[best])


def detect_period(
    series: np.ndarray | Sequence[float],
    step_seconds: float,
    candidates_seconds: Sequence[float] = DEFAULT_CANDIDATES_SECONDS,
    *,
    min_correlation: float = 0.3,
) -> float | None:
    """The dominant season length in seconds, or None when no cycle is convincing.

    A period is only considered when the series covers at least two full cycles of it.
    """
    y = _fill_gaps(np.asarray(series, dtype=float))
    n = len(y)
    steps = {round(c / step_seconds) for c in candidates_seconds}
    found = _periodogram_candidate(y) if n >= 8 else None
    if found is not None and found * DISCOVERED_MIN_CYCLES <= n:
        near = [s for s in steps if abs(found - s) <= 0.05 * s]
        steps.add(near[0] if near else found)
    scored = sorted((p, seasonal_correlation(y, p)) for p in steps if p >= 2 and 2 * p <= n)
    accepted = [(p, c) for p, c in scored if c >= min_correlation]
    if not accepted:
        return None
    best_p, best_c = accepted[0]
    for p, c in accepted[1:]:
        if abs(p / best_p - round(p / best_p)) < 0.05:
            # a multiple of the current best: compare both on the same (longer) de-trending
            shorter = seasonal_correlation(y, best_p, detrend_steps=p)
            if c > shorter + MULTIPLE_MARGIN:
                best_p, best_c = p, c
        elif c > best_c:
            best_p, best_c = p, c
    return best_p * step_seconds
