"""The TTFT budget of one request: the SLO's seconds plus, when the policy says so, seconds per 1,000
prompt tokens (docs/slo.md). One function, used by the decision, the simulator's scoring and the bench.

It takes any SLO object with `ttft_seconds` and `ttft_seconds_per_kilo_prompt_tokens` (the policy's
SLOSpec, the simulator's scenario SLO) and a prompt length or an array of them (plain arithmetic: a numpy
array in, a numpy array out).
"""

from __future__ import annotations

import math
from typing import Protocol, TypeVar


class TTFTObjective(Protocol):
    @property
    def ttft_seconds(self) -> float | None: ...

    @property
    def ttft_seconds_per_kilo_prompt_tokens(self) -> float | None: ...


Tokens = TypeVar("Tokens")


def ttft_budget(slo: TTFTObjective, prompt_tokens: Tokens) -> Tokens:
    """Seconds to the first token a request of `prompt_tokens` is allowed: `ttftSeconds` +
    `ttftSecondsPerKiloPromptTokens` × prompt_tokens / 1000. Infinite when the SLO has no TTFT objective."""
    base = slo.ttft_seconds
    if base is None:
        return prompt_tokens * 0.0 + math.inf  # type: ignore[operator, return-value]
    slope = slo.ttft_seconds_per_kilo_prompt_tokens or 0.0
    return base + prompt_tokens * (slope / 1000.0)  # type: ignore[operator, return-value]


def length_dependent(slo: TTFTObjective) -> bool:
    """Whether the TTFT budget depends on the prompt length."""
    return slo.ttft_seconds is not None and bool(slo.ttft_seconds_per_kilo_prompt_tokens)
