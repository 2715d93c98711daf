"""Did a stage hold the SLO? Pure summaries of one stage's request results (times in replica seconds).

The SLO is the policy's (`spec.slo`): a request meets it when its TTFT ≤ `ttftSeconds` and its queue
time ≤ `queueTimeSeconds` (each when set); the stage holds when at least `quantile` of its requests met
it. Failed, timed-out and dropped requests (the client's in-flight bound was reached) count as misses.
A client cannot see queue time, so it is estimated as TTFT minus the idle replica's TTFT (the median
TTFT of the first, lightest stage).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from autoscaler.profile.client import Result


@dataclass(frozen=True, slots=True)
class SLO:
    ttft_seconds: float | None = 2.0
    queue_time_seconds: float | None = None
    quantile: float = 0.99

    @classmethod
    def of_policy(cls, slo: object) -> SLO:
        return cls(getattr(slo, "ttft_seconds", None), getattr(slo, "queue_time_seconds", None),
                   float(getattr(slo, "quantile", 0.99)))

    def describe(self) -> str:
        parts = []
        if self.ttft_seconds is not None:
            parts.append(f"TTFT ≤ {self.ttft_seconds:g} s")
        if self.queue_time_seconds is not None:
            parts.append(f"queue time ≤ {self.queue_time_seconds:g} s")
        return " and ".join(parts) + f" for {self.quantile:.3g} of requests"

    def deadline(self, idle_ttft: float) -> float:
        """The TTFT within which a request meets the SLO."""
        limits = [x for x in (self.ttft_seconds,
                              None if self.queue_time_seconds is None else idle_ttft + self.queue_time_seconds)
                  if x is not None]
        return min(limits) if limits else float("inf")

    def met(self, r: Result, idle_ttft: float) -> bool:
        return r.ok and r.ttft is not None and r.ttft <= self.deadline(idle_ttft)


@dataclass(frozen=True, slots=True)
class StageSummary:
    rate: float  # offered requests per second
    requests: int  # arrivals measured (dropped included)
    completed: int
    dropped: int
    attainment: float
    holds: bool
    ttft_p50: float | None = None
    ttft_at_quantile: float | None = None
    itl_mean: float | None = None
    mean_prompt_tokens: float | None = None  # from usage
    mean_output_tokens: float | None = None
    mean_in_flight: float | None = None  # what arrivals saw (Poisson arrivals see time averages)
    prefill_tokens_per_second: float | None = None  # median prompt tokens / TTFT
    errors: dict[str, int] = field(default_factory=dict)  # up to 3 most common, with counts


def idle_ttft(results: Sequence[Result]) -> float:
    ttfts = [r.ttft for r in results if r.ok and r.ttft is not None]
    return float(np.median(ttfts)) if ttfts else 0.0


def summarise(rate: float, results: Sequence[Result], dropped: int, in_flight_seen: Sequence[int], slo: SLO,
              idle: float, broke_early: bool = False) -> StageSummary:
    """`broke_early`: the stage was stopped once its misses exceeded what the quantile allows."""
    n = len(results) + dropped
    ok = [r for r in results if r.ok and r.ttft is not None]
    met = sum(slo.met(r, idle) for r in results)
    attainment = met / n if n else 0.0
    ttfts = np.array([r.ttft for r in ok], dtype=float)
    itls = [r.itl for r in ok if r.itl is not None]
    prompts = [r.prompt_tokens for r in ok if r.prompt_tokens is not None]
    outs = [r.output_tokens for r in ok if r.output_tokens is not None]
    speeds = [r.prompt_tokens / r.ttft for r in ok if r.prompt_tokens and r.ttft and r.ttft > 0]
    errors = Counter(r.error or "failed" for r in results if not r.ok)
    if dropped:
        errors["dropped: the client's in-flight bound was reached"] = dropped
    return StageSummary(
        rate=rate, requests=n, completed=len(ok), dropped=dropped, attainment=attainment,
        holds=n > 0 and attainment >= slo.quantile and not broke_early,
        ttft_p50=float(np.median(ttfts)) if len(ttfts) else None,
        ttft_at_quantile=float(np.quantile(ttfts, slo.quantile)) if len(ttfts) else None,
        itl_mean=float(np.mean(itls)) if itls else None,
        mean_prompt_tokens=float(np.mean(prompts)) if prompts else None,
        mean_output_tokens=float(np.mean(outs)) if outs else None,
        mean_in_flight=float(np.mean(in_flight_seen)) if len(in_flight_seen) else None,
        prefill_tokens_per_second=float(np.median(speeds)) if speeds else None,
        errors=dict(errors.most_common(3)),
    )
