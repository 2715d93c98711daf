"""Image-pull durations from kubelet `Pulled` events.

Formats seen across kubelet versions (pkg/kubelet/images/image_manager.go):
- `Successfully pulled image "x" in 1m3.5s (1m3.6s including waiting). Image size: 123 bytes.`
- `Successfully pulled image "x" in 2.14s (2.14s including waiting)`
- `Successfully pulled image "x" in 393ms`
- `Container image "x" already present on machine` (newer: `... and can be accessed by the pod`)
The "including waiting" figure is used when present: waiting for a serialized pull delays the replica too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
