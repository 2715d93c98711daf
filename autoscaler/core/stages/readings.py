"""Readings: the value of each signal the decision may use this tick, or None."""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.signals import Signals


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

    @property
    def demand_known(self) -> bool:
        p, g = self.prompt_tokens_rate, self.generation_tokens_rate
        return p is not None and g is not None and p >= 0 and g >= 0


def read(signals: Signals, staleness_seconds: float) -> Readings:
    s = staleness_seconds
    return Readings(
        request_rate=signals.request_rate.fresh(s),
        prompt_tokens_rate=signals.prompt_tokens_rate.fresh(s),
        generation_tokens_rate=signals.generation_tokens_rate.fresh(s),
        running=signals.running.fresh(s),
        waiting=signals.waiting.fresh(s),
        kv_cache_usage=signals.kv_cache_usage.fresh(s),
        queue_time_p90_seconds=signals.queue_time_p90_seconds.fresh(s),
        ttft_p90_seconds=signals.ttft_p90_seconds.fresh(s),
    )
