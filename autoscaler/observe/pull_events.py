"""Image-pull durations from kubelet `Pulled` and `Pulling` events.

Formats seen across kubelet versions (pkg/kubelet/images/image_manager.go):
- `Successfully pulled image "x" in 1m3.5s (1m3.6s including waiting). Image size: 123 bytes.`
- `Successfully pulled image "x" in 2.14s (2.14s including waiting)`
- `Successfully pulled image "x" in 393ms`
- `Container image "x" already present on machine` (newer: `... and can be accessed by the pod`)
The "including waiting" figure is used when present: waiting for a serialized pull delays the replica too.
A pull that failed and was retried is timed from its first `Pulling` event (`retried_pull_seconds`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.observe.timefmt import event_time, parse_time

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|μs|ms|s|m|h)")
_DURATION = r"((?:\d+(?:\.\d+)?(?:ns|us|µs|μs|ms|s|m|h))+)"
_PULLED = re.compile(
    r'Successfully pulled image "([^"]*)" in ' + _DURATION + r"(?: \(" + _DURATION + r" including waiting\))?"
)
_PRESENT = re.compile(r'[Ii]mage "([^"]*)" already present on machine')


def parse_go_duration(text: str) -> float | None:
    """Seconds in a Go `time.Duration` string such as `1m3.5s` or `393ms`; None if it is not one."""
    pos, total = 0, 0.0
    for m in _PART.finditer(text):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return total if pos == len(text) and pos > 0 else None


@dataclass(frozen=True, slots=True)
class Pull:
    image: str
    seconds: float
    cached: bool


def parse_pulled(message: str) -> Pull | None:
    m = _PULLED.search(message)
    if m:
        seconds = parse_go_duration(m.group(3) or m.group(2))
        return Pull(m.group(1), seconds, False) if seconds is not None else None
    m = _PRESENT.search(message)
    if m:
        return Pull(m.group(1), 0.0, True)
    return None


def container_of(e: Mapping[str, Any]) -> str | None:
    """The main container a kubelet event is about (`spec.containers{name}`), or None."""
    path = (e.get("involvedObject") or {}).get("fieldPath") or ""
    return path[len("spec.containers{") : -1] if path.startswith("spec.containers{") and path.endswith("}") else None


def first_pulling_events(events: Iterable[Mapping[str, Any]]) -> dict[str, tuple[float, int]]:
    """Per main container, when the kubelet first said `Pulling` and how many times it said so (the event
    recorder folds repeats of one message into one event with a count)."""
    out: dict[str, tuple[float, int]] = {}
    for e in events:
        name = container_of(e) if e.get("reason") == "Pulling" else None
        first = parse_time(e.get("firstTimestamp")) or event_time(e)
        if name is None or first is None:
            continue
        count = e.get("count")
        n = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
        if name in out:
            t, m = out[name]
            out[name] = (min(t, first), m + n)
        else:
            out[name] = (first, n)
    return out


def retried_pull_seconds(reported: float, pulled_at: float, first_pulling_at: float, attempts: int) -> float:
    """A pull the kubelet attempted more than once (ErrImagePull, then back-off: a registry's rate limit, a
    timeout) took from its first `Pulling` to `Pulled`; the `Pulled` message times only the last attempt.
    Only for a container that never restarted: one that did may have pulled again (imagePullPolicy Always),
    so its count says nothing (the caller, observe/pods.py, checks)."""
    if attempts > 1 and pulled_at >= first_pulling_at:
        return max(reported, pulled_at - first_pulling_at)
    return reported
