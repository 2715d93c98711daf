"""The capacity block: one replica exactly busy at the knee in the policy's own capacity model, and YAML
the policy schema accepts."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.core.capacity import work_rate
from autoscaler.policy import CapacitySpec
from autoscaler.profile.capacity_block import CapacityError, capacity_at_knee, capacity_yaml


@given(st.floats(0.05, 100), st.floats(1, 30000), st.floats(1, 4000), st.one_of(st.none(), st.floats(10, 1e6)),
       st.one_of(st.none(), st.floats(0.01, 500)))
def test_one_replica_is_busy_at_the_knee(rate: float, p: float, o: float, prefill: float | None,
                                         in_flight: float | None) -> None:
    cap = capacity_at_knee(rate, p, o, prefill, in_flight)
    spec = CapacitySpec(prompt_tokens_per_second=cap.prompt_tokens_per_second,
                        generation_tokens_per_second=cap.generation_tokens_per_second)
    assert work_rate(spec, rate * p, rate * o) == pytest.approx(1.0)
    assert cap.max_concurrency is None or cap.max_concurrency >= max(1, in_flight or 0)


def test_the_prefill_share_follows_the_idle_prefill_speed() -> None:
    cap = capacity_at_knee(2.0, 1000, 100, 10000, 8.0)  # 2000 prompt tok/s of a 10000 tok/s prefill: 20%
    assert cap.prefill_share == pytest.approx(0.2)
    assert cap.prompt_tokens_per_second == pytest.approx(10000)
    assert cap.generation_tokens_per_second == pytest.approx(200 / 0.8)
    assert cap.max_concurrency == 8


def test_yaml_is_a_policy_capacity_block() -> None:
    text = capacity_yaml(capacity_at_knee(2.0, 1000, 100, 10000, 7.2), ["measured here"])
    assert text.startswith("# measured here\n")
    block = yaml.safe_load(text)["capacity"]
    assert set(block) == {"promptTokensPerSecond", "generationTokensPerSecond", "maxConcurrency"}
    CapacitySpec.model_validate(block)


def test_no_usage_means_no_block() -> None:
    with pytest.raises(CapacityError, match="include_usage"):
        capacity_at_knee(2.0, None, 100, None, None)
