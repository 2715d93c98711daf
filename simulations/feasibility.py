"""Which requests' TTFT SLO an idle replica can meet, and scoring attainment over those (docs/slo.md).

**Idle-replica TTFT.** On an idle engine (`simulations.engine_step`) a request of p prompt tokens is
scheduled at arrival and prefilled in chunks of `max_num_batched_tokens` (B), one engine step each, with no
decode beside it; its first token comes at the end of the step carrying its last chunk. With the step cost
`base + tokens · per_token + Σ_chunks tokens · (start + (tokens + 1) / 2) · attention_pair`, the chunk sums
telescope: TTFT = ⌈p / B⌉ · base + p · per_token + p (p + 1) / 2 · attention_pair. No request can have a
shorter one on that replica (a busy engine's steps only get longer); a prefix-cache hit could, so with
prefix caching this is the uncached bound.

**Scoring.** A request is infeasible when that TTFT exceeds its budget (`autoscaler.core.slo.ttft_budget`).
Attainment is the share of feasible requests that met their budget; the infeasible share is reported
beside it; `attainment_all` is over every request. Every infeasible request is a miss whatever the fleet
does, so attainment over feasible requests = attainment over all / (1 − infeasible share).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from autoscaler.core.slo import TTFTObjective, ttft_budget
from simulations.outcome import Outcome
from simulations.profiles import ServingProfile


def idle_ttft_seconds(serving: ServingProfile, prompt_tokens: np.ndarray) -> np.ndarray:
    """TTFT of each prompt length on an idle replica, as the engine step model gives it (module docstring)."""
    p = np.asarray(prompt_tokens, dtype=np.float64)
    steps = np.ceil(p / serving.max_num_batched_tokens)
    return np.asarray(steps * serving.itl_base_seconds + p / serving.prefill_tokens_per_second
                      + p * (p + 1.0) * 0.5 * serving.attention_seconds_per_token_pair)


def feasible(slo: TTFTObjective, serving: ServingProfile, prompt_tokens: np.ndarray) -> np.ndarray:
    """Per request: whether an idle replica meets its TTFT budget."""
    p = np.asarray(prompt_tokens, dtype=np.float64)
    return np.asarray(idle_ttft_seconds(serving, p) <= ttft_budget(slo, p))


def score_requests(outcome: Outcome, ttft: np.ndarray, prompt_tokens: np.ndarray, slo: TTFTObjective,
                   serving: ServingProfile, aborted: np.ndarray | None = None) -> tuple[Outcome, np.ndarray]:
    """`outcome` with attainment over feasible requests, per-request budgets, and the infeasible share;
    and the mask of feasible requests that missed their budget. A request a scale-down aborted is a miss
    whatever its first token's time (`aborted`: mask per request)."""
    p = np.asarray(prompt_tokens, dtype=np.float64)
    t = np.asarray(ttft, dtype=np.float64)
    met = np.isfinite(t) & (t <= ttft_budget(slo, p))
    if aborted is not None:
        met &= ~np.asarray(aborted, dtype=bool)
    ok = feasible(slo, serving, p)
    n, n_ok = len(t), int(ok.sum())
    attainment = float(met[ok].mean()) if n_ok else 1.0
    scored = replace(outcome, attainment=attainment, attainment_all=float(met.mean()) if n else 1.0,
                     infeasible_share=1.0 - n_ok / n if n else 0.0)
    return scored, ok & ~met


def score_distribution(outcome: Outcome, prompt_sample: np.ndarray, slo: TTFTObjective,
                       serving: ServingProfile) -> Outcome:
    """The same for a run scored on a prompt-length distribution (the fluid fleet, a flat TTFT budget):
    the infeasible share is the distribution's; attainment over feasible requests is attainment over all
    divided by the feasible share (capped at 1: the fluid model's prefill cost is an approximation)."""
    sample = np.asarray(prompt_sample, dtype=np.float64)
    share = 1.0 - float(feasible(slo, serving, sample).mean()) if len(sample) else 0.0
    over_all = outcome.attainment
    attainment = min(1.0, over_all / (1.0 - share)) if share < 1.0 else 1.0
    return replace(outcome, attainment=attainment, attainment_all=over_all, infeasible_share=share)
