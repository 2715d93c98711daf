"""Last known good values, so a failed query yields an *aging* value rather than a zero.

When a query fails or a model's series vanish, the source returns the value it last saw with its true
age (now − sample time). The core's `Measured.fresh(staleness)` then drops it once it is too old, so a
dead Prometheus leads to "metrics missing" (hold), never to "no demand" (scale down).

A value is remembered with what it measured (`identity`: Prometheus, engine, selector, model): after a
policy is edited to read another model, the old model's numbers are not handed out as the new one's.
Only finite values and sample times are kept, and an age is never NaN or negative (a NaN age would
compare as "not older than the limit", i.e. fresh).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable

from autoscaler.core.signals import MISSING, Measured


class LastKnown:
    def __init__(self) -> None:
        # (policy key, signal) -> (value, sample time, identity)
        self._values: dict[tuple[str, str], tuple[float, float, Hashable]] = {}

    def put(self, policy_key: str, signal: str, value: float, sample_time: float,
            identity: Hashable = None) -> None:
        if not (math.isfinite(value) and math.isfinite(sample_time)):
            return
        old = self._values.get((policy_key, signal))
        if old is None or old[2] != identity or sample_time >= old[1]:
            self._values[(policy_key, signal)] = (value, sample_time, identity)

    def get(self, policy_key: str, signal: str, now: float, identity: Hashable = None) -> Measured:
        hit = self._values.get((policy_key, signal))
        if hit is None or hit[2] != identity:
            return MISSING
        value, t, _ = hit
        age = now - t
        return Measured(value, max(0.0, age) if math.isfinite(age) else math.inf)

    def keep_only(self, policy_keys: Iterable[str]) -> None:
        """Forget policies that are gone."""
        keep = set(policy_keys)
        for k in [k for k in self._values if k[0] not in keep]:
            del self._values[k]
