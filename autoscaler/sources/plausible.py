"""Physical bounds of each signal: a value outside them is a broken exporter, not a load.

A sample of 1e308 waiting requests or a KV-cache use of 3.5 is finite, so it would pass a NaN check and
reach the decision as a real number (1e308 waiting asks for the fleet's maximum at once). The sources
check every value against these bounds; one outside them is counted
(`inference_autoscaler_metric_source_errors_total{kind="implausible"}`) and the signal is reported
missing (with the last good value aging, in the Prometheus source), never as zero and never clamped into
range. The bounds are far beyond any real fleet (docs/reliability-sources.md gives the arithmetic), so
they only catch garbage.
"""

from __future__ import annotations

import math

from autoscaler.core.stages.readings import PLAUSIBLE
from autoscaler.sources.engines import SignalName

# Per model, summed (or averaged) over all its replicas: (lowest, highest) plausible value. One table for
# the sources and the decision core (`autoscaler.core.stages.readings.PLAUSIBLE`, which says why each).
BOUNDS: dict[SignalName, tuple[float, float]] = {s: PLAUSIBLE[s.value] for s in SignalName}

# A counter or histogram bucket count beyond 2**53 has lost integer precision: its increases are noise.
MAX_COUNT = float(2**53)

def plausible(signal: SignalName, value: float) -> bool:
    """True when `value` is finite and inside the signal's physical bounds."""
    lo, hi = BOUNDS[signal]
    return math.isfinite(value) and lo <= value <= hi


def plausible_count(value: float) -> bool:
    """True for a cumulative count (counter, bucket) that can be real: finite, 0..2**53."""
    return math.isfinite(value) and 0.0 <= value <= MAX_COUNT


def in_range(signal: SignalName, value: float) -> float:
    """A plausible `value` with float rounding above a fraction's bound removed (1.0000001 -> 1.0)."""
    return min(value, 1.0) if signal is SignalName.KV_CACHE_USAGE else value
