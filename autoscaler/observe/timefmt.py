"""Kubernetes timestamps (RFC 3339, `Z` suffix, optional fraction) as float seconds since the epoch."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any


def parse_time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def format_time(seconds: float) -> str:
    """RFC 3339 with one-second resolution, as `metav1.Time` serializes."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(seconds: float) -> str:
    """RFC 3339 with microseconds, as `metav1.MicroTime` (Lease renewTime, events.k8s.io eventTime)."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_time(ev: Mapping[str, Any]) -> float | None:
    """When a Kubernetes event happened: its last occurrence, else its eventTime, first occurrence or creation."""
    return (
        parse_time(ev.get("lastTimestamp"))
        or parse_time(ev.get("eventTime"))
        or parse_time(ev.get("firstTimestamp"))
        or parse_time((ev.get("metadata") or {}).get("creationTimestamp"))
    )
