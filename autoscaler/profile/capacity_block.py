"""The policy's `capacity` block from a measured knee.

The policy's capacity model (autoscaler/core/capacity.py) says a replica serving P prompt and G generation
tokens per second is `P / promptTokensPerSecond + G / generationTokensPerSecond` replicas busy. At the
knee, one replica is exactly as busy as the SLO allows, so the two figures are chosen to make that sum 1
for the measured mix (P = knee rate × mean prompt tokens, G = knee rate × mean output tokens). One mix
cannot say how the replica's time splits between prefill and decode; the split is taken from the idle
replica's prefill speed (prompt tokens / TTFT on the first, lightest stage): the prefill share is
P / that speed, at most 0.9, and decode gets the rest. `maxConcurrency` is the mean number of requests in
flight that arrivals saw at the knee (running + waiting, by Little's law the knee's concurrency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import yaml

from autoscaler.policy import CapacitySpec

MAX_PREFILL_SHARE = 0.9
MIN_PREFILL_SHARE = 0.01


class CapacityError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Capacity:
    prompt_tokens_per_second: float
    generation_tokens_per_second: float
    max_concurrency: int | None
    prefill_share: float


def capacity_at_knee(rate: float, mean_prompt_tokens: float | None, mean_output_tokens: float | None,
                     idle_prefill_tokens_per_second: float | None, mean_in_flight: float | None) -> Capacity:
    if mean_prompt_tokens is None or mean_output_tokens is None:
        raise CapacityError("the server reported no token usage at the knee: it must support "
                            "stream_options.include_usage (vLLM does)")
    if rate <= 0 or mean_prompt_tokens <= 0 or mean_output_tokens <= 0:
        raise CapacityError("the knee's rate and token counts must be > 0")
    p, g = rate * mean_prompt_tokens, rate * mean_output_tokens
    share = p / idle_prefill_tokens_per_second if idle_prefill_tokens_per_second else 0.5
    share = min(MAX_PREFILL_SHARE, max(MIN_PREFILL_SHARE, share))
    conc = max(1, math.ceil(mean_in_flight)) if mean_in_flight is not None and mean_in_flight > 0 else None
    return Capacity(p / share, g / (1 - share), conc, share)


def capacity_yaml(cap: Capacity, comments: list[str] | None = None) -> str:
    """`capacity:` YAML (camelCase, as in a policy's spec), checked against the policy schema first."""
    fields: dict[str, object] = {
        "promptTokensPerSecond": round(cap.prompt_tokens_per_second, 1),
        "generationTokensPerSecond": round(cap.generation_tokens_per_second, 1),
    }
    if cap.max_concurrency is not None:
        fields["maxConcurrency"] = cap.max_concurrency
    CapacitySpec.model_validate(fields)  # raises on a value the policy would reject
    head = "".join(f"# {c}\n" for c in comments or [])
    return head + yaml.safe_dump({"capacity": fields}, sort_keys=False)
