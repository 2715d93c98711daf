"""Last known good values, so a failed query yields an *aging* value rather than a zero.

When a query fails or a model's series vanish, the source returns the value it last saw with its true
age (now − sample time). The core's `Measured.fresh(staleness)` then drops it once it is too old, so a
dead Prometheus leads to "metrics missing" (hold), never to "no demand" (scale down).
"""

from __future__ import annotations

from collections.abc import Iterable

from autoscaler.core.signals import MISSING, Measured


class LastKnown:
    def __init__(self) -> None:
        # (policy key, signal) -> (value, sample time)
        self._values: dict[tuple[str, str], tuple[float, float]] = {}

    def put(self, policy_key: str, signal: str, value: float, sample_time: float) -> None:
        old = self._values.get((policy_key, signal))
        if old is None or sample_time >= old[1]:
            self._values[(policy_key, signal)] = (value, sample_time)

    def get(self, policy_key: str, signal: str, now: float) -> Measured:
        hit = self._values.get((policy_key, signal))
        if hit is None:
            return MISSING
        value, t = hit
        return Measured(value, max(0.0, now - t))

    def keep_only(self, policy_keys: Iterable[str]) -> None:
        """Forget policies that are gone."""
        keep = set(policy_keys)
        for k in [k for k in self._values if k[0] not in keep]:
            del self._values[k]
