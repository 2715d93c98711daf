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

from autoscaler.sources.engines import SignalName

# Per model, summed (or averaged) over all its replicas: (lowest, highest) plausible value.
# - running/waiting: 10,000 replicas x 1,000 sequences each is 1e7.
# - request rate 1e6/s and token rates 1e9/s: 10,000 replicas at 100 requests/s or 100,000 tokens/s each.
# - KV-cache use is a fraction of the cache (vLLM computes 1 - free/total): [0, 1].
# - latency quantiles: a week.
BOUNDS: dict[SignalName, tuple[float, float]] = {
    SignalName.REQUEST_RATE: (0.0, 1e6),
    SignalName.PROMPT_TOKENS_RATE: (0.0, 1e9),
    SignalName.GENERATION_TOKENS_RATE: (0.0, 1e9),
    SignalName.RUNNING: (0.0, 1e7),
    SignalName.WAITING: (0.0, 1e7),
    SignalName.KV_CACHE_USAGE: (0.0, 1.0),
    SignalName.QUEUE_TIME_P90: (0.0, 7 * 86400.0),
    SignalName.TTFT_P90: (0.0, 7 * 86400.0),
}

# A counter or histogram bucket count beyond 2**53 has lost integer precision: its increases are noise.
MAX_COUNT = float(2**53)

# KV use is computed in floating point; a hair over 1 is rounding, not garbage.
_FRACTION_SLACK = 1e-6


def plausible(signal: SignalName, value: float) -> bool:
    """True when `value` is finite and inside the signal's physical bounds."""
    lo, hi = BOUNDS[signal]
    if signal is SignalName.KV_CACHE_USAGE:
        hi += _FRACTION_SLACK
    return math.isfinite(value) and lo <= value <= hi


def plausible_count(value: float) -> bool:
    """True for a cumulative count (counter, bucket) that can be real: finite, 0..2**53."""
    return math.isfinite(value) and 0.0 <= value <= MAX_COUNT


def in_range(signal: SignalName, value: float) -> float:
    """A plausible `value` with float rounding above a fraction's bound removed (1.0000001 -> 1.0)."""
    return min(value, 1.0) if signal is SignalName.KV_CACHE_USAGE else value
