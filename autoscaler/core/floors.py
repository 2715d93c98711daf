"""Replica floors: the policy minimum and time-of-day floor schedules."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from autoscaler.policy import WEEKDAYS, FloorWindow, ReplicasSpec


def _minutes(hhmm: str) -> int:
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


def window_active(window: FloorWindow, now: float) -> bool:
    """Whether `now` (unix seconds) falls in the window, in the window's time zone.

    A window whose end is earlier than its start crosses midnight and belongs to the day it starts on.
    """
    local = datetime.fromtimestamp(now, ZoneInfo(window.timezone))
    minute = local.hour * 60 + local.minute
    start, end = _minutes(window.start), _minutes(window.end)
    today = WEEKDAYS[local.weekday()]
    if start <= end:
        return today in window.days and start <= minute < end
    yesterday = WEEKDAYS[(local.weekday() - 1) % 7]
    return (today in window.days and minute >= start) or (yesterday in window.days and minute < end)


def floor_at(spec: ReplicasSpec, now: float) -> int:
    """The minimum replica count in force at `now`."""
    floor = spec.min
    for w in spec.floor_schedule:
        if w.min_replicas > floor and window_active(w, now):
            floor = w.min_replicas
    return floor


def highest_floor(spec: ReplicasSpec) -> int:
    """The largest floor any schedule ever asks for: what to run when blind (onMissingMetrics: floor)."""
    return max([spec.min, *(w.min_replicas for w in spec.floor_schedule)])
