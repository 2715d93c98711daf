"""Exponential backoff with a cap, per policy: API errors slow the retries down, never the other policies."""

from __future__ import annotations


def backoff_seconds(failures: int, base_seconds: float, cap_seconds: float) -> float:
    """Delay before the next attempt after `failures` consecutive failures (1 -> base, doubling, capped)."""
    if failures <= 0:
        return base_seconds
    return min(cap_seconds, base_seconds * 2.0 ** (failures - 1))
