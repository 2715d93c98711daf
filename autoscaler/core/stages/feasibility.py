"""Feasibility: the share of requests whose TTFT SLO no number of replicas can meet.

On an idle replica a prompt of p tokens takes p / `capacity.promptTokensPerSecond` to prefill; its budget is
`ttft_budget(slo, p)` (autoscaler.core.slo). A request is infeasible when the first exceeds the second:
p × (1 / rate − slope / 1000) > ttftSeconds, i.e. above a threshold length (none when the SLO's slope is at
least the prefill time per token). The engine's prompt-length histogram (`vllm:request_prompt_tokens`) says
what share of recent requests is longer than that (docs/slo.md).
"""

from __future__ import annotations

import math

from autoscaler.core.signals import Signals
from autoscaler.policy import PolicySpec


def infeasible_threshold_tokens(policy: PolicySpec) -> float:
    """The prompt length above which a request misses its TTFT SLO even on an idle replica (inf: none)."""
    slo = policy.slo
    if slo.ttft_seconds is None:
        return math.inf
    per_token = 1.0 / policy.capacity.prompt_tokens_per_second - (slo.ttft_seconds_per_kilo_prompt_tokens or 0.0) / 1000
    return slo.ttft_seconds / per_token if per_token > 0 else math.inf


def feasibility(policy: PolicySpec, signals: Signals) -> tuple[float | None, str]:
    """(share of recent requests whose TTFT SLO is infeasible on an idle replica, why). The share is None
    when it cannot be judged: no TTFT objective, or no fresh prompt-length histogram with enough requests."""
    if policy.slo.ttft_seconds is None:
        return None, "no TTFT objective"
    hist = signals.prompt_tokens_histogram
    need = policy.capacity.slo_feedback.min_requests
    if hist is None or not 0.0 <= hist.age_seconds <= policy.metrics.staleness_seconds or not hist.total >= need:
        return None, "no fresh prompt-length histogram (vllm:request_prompt_tokens) with enough requests"
    limit = infeasible_threshold_tokens(policy)
    rate = policy.capacity.prompt_tokens_per_second
    if math.isinf(limit):
        return 0.0, "every prompt length meets its TTFT budget on an idle replica"
    # Prompt lengths are no latency tail: the plain linear share inside the bucket (histogram_quantile's).
    within = hist.linear_share_within(limit)
    share = 0.0 if within is None else max(0.0, min(1.0, 1.0 - within))
    return share, (f"{100 * share:.1f}% of recent requests have prompts over {limit:,.0f} tokens, whose prefill "
                   f"alone at {rate:,.0f} tokens/s exceeds their TTFT budget: more replicas cannot help them")


def infeasible(policy: PolicySpec, share: float | None) -> bool:
    """The SLO cannot be met at its quantile however many replicas run: the infeasible share exceeds the
    error budget (1 − quantile)."""
    return share is not None and share > 1.0 - policy.slo.quantile
