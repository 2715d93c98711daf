"""Readings: the value of each signal the decision may use this tick, and which ones it may not trust.

A value is used only if it is present, fresh (a real age within metrics.stalenessSeconds) and plausible
(within the bounds below: a finite value outside them is a broken source, not load). Every signal the
decision uses that is stale, implausible or, for signals every engine reports, absent, is listed in
`unknown`: the decision may still scale up on what it knows, never down.

Absence alone is tolerated for what an engine may legitimately not report: the KV-cache gauge (TGI has
none) and the latency quantiles (TGI has no TTFT histogram; a quantile is undefined while no request
finishes). A quantile the source keeps re-serving as it ages (the last known value) is expected while
no request finishes, so it counts as unknown only while requests are finishing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoscaler.core.signals import LatencyHistogram, Measured, Signals, age_within
from autoscaler.policy import PolicySpec

# Plausible range of each signal, for a whole fleet of one model: the one table the sources and the decision
# both check (`autoscaler.sources.plausible` derives its bounds from it). Far beyond any real fleet and
# tight enough that garbage such as 1e308 waiting sequences or a KV-cache use above 100% is recognised:
# - running/waiting: 10,000 replicas (replicas.max's bound) x 1,000 sequences each is 1e7;
# - request rate 1e6/s and token rates 1e9/s: 10,000 replicas at 100 requests/s or 100,000 tokens/s each;
# - KV-cache use is a fraction of the cache (vLLM computes 1 - free/total), a hair over 1 being rounding;
# - latency quantiles: a week.
PLAUSIBLE: dict[str, tuple[float, float]] = {
    "request_rate": (0.0, 1e6),  # requests/s
    "prompt_tokens_rate": (0.0, 1e9),  # tokens/s
    "generation_tokens_rate": (0.0, 1e9),  # tokens/s
    "running": (0.0, 1e7),  # sequences
    "waiting": (0.0, 1e7),  # sequences
    "kv_cache_usage": (0.0, 1.0 + 1e-6),  # fraction of the KV cache in use (a mean over replicas)
    "queue_time_p90_seconds": (0.0, 7 * 86400.0),
    "ttft_p90_seconds": (0.0, 7 * 86400.0),
    # prompt length: the longest context windows are ~1e7 tokens
    "prompt_tokens_p90": (0.0, 1e8),
}
MAX_HISTOGRAM_COUNT = 1e12  # requests in one rate window
# Signals whose absence is not a fault (see the module docstring).
ABSENCE_TOLERATED = frozenset({"kv_cache_usage", "queue_time_p90_seconds", "ttft_p90_seconds", "prompt_tokens_p90"})
QUANTILES = frozenset({"queue_time_p90_seconds", "ttft_p90_seconds", "prompt_tokens_p90"})


@dataclass(frozen=True, slots=True)
class Readings:
    request_rate: float | None
    prompt_tokens_rate: float | None
    generation_tokens_rate: float | None
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None
    queue_time_p90_seconds: float | None
    ttft_p90_seconds: float | None
    unknown: tuple[str, ...] = ()  # signals the decision uses that it cannot trust this tick: no scale-down
    implausible: tuple[str, ...] = ()  # present and fresh but outside PLAUSIBLE (also in `unknown` if used)
    prompt_tokens_p90: float | None = None  # informational: the decision does not read it

    @property
    def demand_known(self) -> bool:
        return self.prompt_tokens_rate is not None and self.generation_tokens_rate is not None


def used_signals(policy: PolicySpec) -> tuple[str, ...]:
    """The signals this policy's decision reads."""
    used = ["request_rate", "prompt_tokens_rate", "generation_tokens_rate", "waiting", "kv_cache_usage"]
    if policy.capacity.max_concurrency is not None:
        used.append("running")
    if policy.scale_up.panic.enabled:
        used.append("queue_time_p90_seconds")
        if policy.slo.ttft_seconds is not None:
            used.append("ttft_p90_seconds")
    return tuple(used)


def plausible(name: str, value: float) -> bool:
    lo, hi = PLAUSIBLE[name]
    return lo <= value <= hi  # False for NaN


def _value(m: Measured, name: str, staleness: float) -> tuple[float | None, bool]:
    """(the usable value or None, whether a present fresh value was implausible)."""
    v = m.value
    if v is None or not age_within(m.age_seconds, staleness):
        return None, False
    return (v, False) if plausible(name, v) else (None, True)


def histogram_plausible(h: LatencyHistogram | None) -> bool:
    return h is None or (0.0 <= h.total <= MAX_HISTOGRAM_COUNT and all(math.isfinite(c) for c in h.cumulative_counts))


def read(policy: PolicySpec, signals: Signals) -> Readings:
    staleness = policy.metrics.staleness_seconds
    values: dict[str, float | None] = {}
    implausible: list[str] = []
    for name in PLAUSIBLE:
        v, bad = _value(getattr(signals, name), name, staleness)
        values[name] = v
        if bad:
            implausible.append(name)
    for name in ("ttft_histogram", "queue_time_histogram", "prompt_tokens_histogram"):
        if not histogram_plausible(getattr(signals, name)):
            implausible.append(name)
    rate = values["request_rate"]
    finishing = rate is None or rate > 0  # requests finish (or we cannot tell): quantiles must be current
    unknown = []
    for name in used_signals(policy):
        if values[name] is not None:
            continue
        m: Measured = getattr(signals, name)
        if name in implausible or m.stale(staleness):
            if name in QUANTILES and not finishing:
                continue  # the last known quantile ages while nothing finishes: expected, not a fault
            unknown.append(name)
        elif name not in ABSENCE_TOLERATED:
            unknown.append(name)  # absent
    return Readings(unknown=tuple(unknown), implausible=tuple(implausible), **values)
