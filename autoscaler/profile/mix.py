"""What each request asks for: (prompt tokens, output tokens) pairs drawn from a trace or a distribution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class LengthMix(Protocol):
    def draw(self, rng: np.random.Generator) -> tuple[int, int]: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Lengths:
    """One length: `fixed` (mean) or `lognormal` (median = mean·exp(−σ²/2), so the mean is `mean`)."""

    mean: float
    sigma: float = 0.0
    cap: int = 32768

    def draw(self, rng: np.random.Generator) -> int:
        x = self.mean if self.sigma <= 0 else rng.lognormal(np.log(self.mean) - 0.5 * self.sigma**2, self.sigma)
        return int(min(self.cap, max(1, round(x))))


@dataclass(frozen=True, slots=True)
class DistributionMix:
    prompt: Lengths
    output: Lengths

    def draw(self, rng: np.random.Generator) -> tuple[int, int]:
        return self.prompt.draw(rng), self.output.draw(rng)

    def describe(self) -> str:
        def one(x: Lengths) -> str:
            return f"{x.mean:g}" if x.sigma <= 0 else f"lognormal(mean {x.mean:g}, sigma {x.sigma:g})"

        return f"prompt {one(self.prompt)}, output {one(self.output)} tokens"


@dataclass(frozen=True, slots=True)
class TraceMix:
    """Pairs sampled (with replacement) from a trace's requests, capped per request."""

    name: str
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    max_prompt_tokens: int = 32768
    max_output_tokens: int = 4096

    def draw(self, rng: np.random.Generator) -> tuple[int, int]:
        i = int(rng.integers(len(self.prompt_tokens)))
        return (int(min(self.max_prompt_tokens, max(1, self.prompt_tokens[i]))),
                int(min(self.max_output_tokens, max(1, self.output_tokens[i]))))

    def describe(self) -> str:
        return (f"trace {self.name} ({len(self.prompt_tokens)} requests; mean prompt "
                f"{float(np.mean(self.prompt_tokens)):.0f}, output {float(np.mean(self.output_tokens)):.0f} tokens)")


def trace_mix(path: str, max_prompt_tokens: int = 32768, max_output_tokens: int = 4096) -> TraceMix:
    """The length mix of a request trace (any format `simulations.trace_loaders.load_trace` reads)."""
    from simulations.trace_loaders import load_trace

    tr = load_trace(path)
    return TraceMix(tr.name, np.asarray(tr.prompt_tokens), np.asarray(tr.output_tokens), max_prompt_tokens,
                    max_output_tokens)
