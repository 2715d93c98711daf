"""A backtest of a policy with warm capacity bills the placeholder pool its decision keeps (issue 13: the warm
pool costs GPU-hours in every report)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from autoscaler.backtest.history import History
from autoscaler.backtest.replay import replay
from autoscaler.policy_loader import parse_policy
from autoscaler.sources.engines import SignalName
from autoscaler.sources.promql import REPLICAS

STEP, STEPS = 60.0, 120


def history() -> History:
    times = 1_700_000_000.0 + STEP * np.arange(STEPS)
    cols = {s.value: np.full(STEPS, np.nan) for s in SignalName}
    cols[SignalName.REQUEST_RATE.value] = np.full(STEPS, 2.0)
    cols[SignalName.PROMPT_TOKENS_RATE.value] = np.full(STEPS, 2.0 * 500)
    cols[SignalName.GENERATION_TOKENS_RATE.value] = np.full(STEPS, 2.0 * 200)
    cols[SignalName.RUNNING.value] = np.full(STEPS, 4.0)
    cols[SignalName.WAITING.value] = np.zeros(STEPS)
    cols[REPLICAS] = np.full(STEPS, 2.0)
    return History(pd.DataFrame(cols, index=times), queries=0)


def policy(warm: dict | None):
    spec = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "model": {"name": "m"},
            "replicas": {"min": 2, "max": 8}}
    if warm is not None:
        spec["warmCapacity"] = warm
    return parse_policy({"apiVersion": "autoscaler.inference.dev/v1alpha1", "kind": "ModelScalingPolicy",
                         "metadata": {"name": "p", "namespace": "n"}, "spec": spec})


def test_the_warm_pool_is_billed_in_the_backtest_estimate() -> None:
    h = history()
    plain = replay(policy(None), h)
    pooled = replay(policy({"enabled": True, "minSlots": 2, "maxSlots": 2}), h)
    cold, warm = plain.estimate_ours, pooled.estimate_ours
    assert cold is not None and warm is not None
    # The light load keeps both at replicas.min (2) throughout; the pool's 2 placeholders, kept from the first
    # decision on, cost what the 2 replicas cost.
    assert set(plain.ours) == set(pooled.ours) == {2}
    assert warm.gpu_hours - cold.gpu_hours == pytest.approx(cold.gpu_hours, rel=0.02)
    assert warm.attainment == cold.attainment


def test_a_history_whose_prompt_tokens_lag_its_requests_still_replays() -> None:
    """vLLM counts a request when it finishes and its prompt tokens when they are prefilled: a step can show
    requests and (almost) no prompt tokens. The replay takes at least one prompt token per request instead of
    refusing the history (the fluid fleet refuses requests without a prompt token)."""
    h = history()
    prompt = h.signals[SignalName.PROMPT_TOKENS_RATE]
    prompt[10:13] = [0.0, 0.5, np.nan]
    result = replay(policy(None), h)
    assert result.estimate_ours is not None and result.estimate_ours.requests > 0
