"""A backtest of a scaleFromZero policy: the gateway's count is the replayed fleet's, so the policy rests
through a quiet stretch of the history and wakes when requests come back."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoscaler.backtest.history import History
from autoscaler.backtest.replay import replay
from autoscaler.policy import ModelScalingPolicy
from autoscaler.policy_loader import parse_policy
from autoscaler.sources.engines import SignalName
from autoscaler.sources.promql import REPLICAS

STEP, STEPS = 60.0, 180
QUIET = slice(30, 120)  # an hour and a half without a request


def history() -> History:
    times = 1_700_000_000.0 + STEP * np.arange(STEPS)
    rate = np.full(STEPS, 2.0)
    rate[QUIET] = 0.0
    cols = {s.value: np.full(STEPS, np.nan) for s in SignalName}
    cols[SignalName.REQUEST_RATE.value] = rate
    cols[SignalName.PROMPT_TOKENS_RATE.value] = rate * 500
    cols[SignalName.GENERATION_TOKENS_RATE.value] = rate * 200
    cols[SignalName.RUNNING.value] = np.where(rate > 0, 4.0, 0.0)
    cols[SignalName.WAITING.value] = np.zeros(STEPS)
    cols[REPLICAS] = np.full(STEPS, 1.0)
    return History(pd.DataFrame(cols, index=times), queries=0)


def policy(zero: bool) -> ModelScalingPolicy:
    spec = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}, "model": {"name": "m"},
            "replicas": {"min": 0 if zero else 1, "max": 8}}
    if zero:
        spec["scaleFromZero"] = {"query": "sum(gateway_in_flight)", "idleSeconds": 600}
    return parse_policy({"apiVersion": "autoscaler.inference.dev/v1alpha1", "kind": "ModelScalingPolicy",
                         "metadata": {"name": "p", "namespace": "n"}, "spec": spec})


def test_the_policy_rests_through_the_quiet_stretch_and_wakes_after_it() -> None:
    h = history()
    zero, one = replay(policy(True), h), replay(policy(False), h)
    quiet = zero.ours[QUIET]
    assert (quiet == 0).sum() >= 60  # at rest for at least an hour of the hour and a half
    assert "ScaleDownToZero" in zero.reasons and "ScaleUpFromZero" in zero.reasons
    assert zero.ours[-1] >= 1  # woken by the requests after the stretch
    assert zero.ours[QUIET][-10:].max() == 0  # nothing woke it before the requests came back
    assert zero.estimate_ours is not None and one.estimate_ours is not None
    assert zero.estimate_ours.gpu_hours < one.estimate_ours.gpu_hours - 0.9
