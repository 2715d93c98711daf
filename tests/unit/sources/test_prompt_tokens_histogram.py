"""The prompt-length histogram (`vllm:request_prompt_tokens`): read like the latency histograms by both
sources, optional, and never a number a pod did not send."""

from __future__ import annotations

import math

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.core.stages.feasibility import feasibility
from autoscaler.policy import PolicySpec
from autoscaler.sources.engines import SignalName, engine_metrics
from autoscaler.sources.exposition import ExpositionError, read_pod_metrics
from autoscaler.sources.scrape import ScrapeMetricsSource

from .helpers import fresh_telemetry, msp, vllm_text
from .test_prometheus_source import GOOD, GOOD_BUCKETS, NOW, by_metric, source

VLLM = engine_metrics("vllm")
# vLLM's build_1_2_5_buckets(max_model_len) for a 32k-token model
BOUNDS = ("1", "2", "5", "10", "20", "50", "100", "200", "500", "1000", "2000", "5000", "10000", "20000", "+Inf")


def prompt_text(counts: dict[str, float], model: str = "m") -> str:
    lines = ["# TYPE vllm:request_prompt_tokens histogram"]
    lines += [f'vllm:request_prompt_tokens_bucket{{engine="0",le="{le}",model_name="{model}"}} {c}'
              for le, c in counts.items()]
    lines.append(f'vllm:request_prompt_tokens_count{{engine="0",model_name="{model}"}} {counts.get("+Inf", 0)}')
    lines.append(f'vllm:request_prompt_tokens_sum{{engine="0",model_name="{model}"}} 0.0')
    return vllm_text(model, waiting=1, running=2, prompt=10, generation=10, success=1) + "\n".join(lines) + "\n"


def cumulative(per_bucket: list[int]) -> dict[str, float]:
    out, run = {}, 0.0
    for le, c in zip(BOUNDS, per_bucket, strict=True):
        run += c
        out[le] = run
    return out


def test_the_exposition_reads_its_buckets_under_the_prompt_signal() -> None:
    m = read_pod_metrics(prompt_text(cumulative([0] * 9 + [5, 3, 2, 0, 0, 0])), VLLM, "m")
    buckets = m.buckets[SignalName.PROMPT_TOKENS_P90]
    assert sorted(v for v in buckets.values()) == sorted((float(le), c) for le, c in
                                                         cumulative([0] * 9 + [5, 3, 2, 0, 0, 0]).items())


def test_the_scrape_source_gives_the_window_increase_and_its_p90() -> None:
    state = {"c": cumulative([0] * 15)}
    tel, _ = fresh_telemetry()

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=prompt_text(state["c"]))

    src = ScrapeMetricsSource({"default/m": ["a"]}, telemetry=tel, transport=httpx.MockTransport(handler))
    assert src.collect([msp("m")], 1000.0)["default/m"].prompt_tokens_histogram is None  # no window yet
    state["c"] = cumulative([0] * 9 + [50, 30, 10, 6, 4, 0])
    s = src.collect([msp("m")], 1015.0)["default/m"]
    h = s.prompt_tokens_histogram
    assert h is not None and h.total == 100
    assert h.share_within(10000) == pytest.approx(0.96)
    assert s.prompt_tokens_p90.value == pytest.approx(5000.0)  # rank 90 is the top of (2000, 5000]


def test_the_prometheus_source_reads_it_from_one_bucket_query() -> None:
    buckets = {**GOOD_BUCKETS, "request_prompt_tokens": [("1000", "50"), ("10000", "96"), ("20000", "100"),
                                                         ("+Inf", "100")]}
    src, _ = source(by_metric(GOOD, fresh_t=NOW - 4, buckets=buckets))
    s = src.collect([msp("m")], NOW)["default/m"]
    h = s.prompt_tokens_histogram
    assert h is not None and h.upper_bounds == (1000.0, 10000.0, 20000.0, math.inf)
    assert h.age_seconds == pytest.approx(4.0)
    # with the default policy (15,000 tokens/s, 2 s): prompts over 30,000 tokens are infeasible: none here
    pol = PolicySpec.model_validate({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m"},
                                     "model": {"name": "m"}})
    assert feasibility(pol, s)[0] == 0.0


def test_it_is_optional_absent_it_is_none_and_the_rest_stands() -> None:
    src, _ = source(by_metric(GOOD, fresh_t=NOW - 4))  # no prompt-length buckets in the answer
    s = src.collect([msp("m")], NOW)["default/m"]
    assert s.prompt_tokens_histogram is None and s.prompt_tokens_p90.value is None
    assert s.ttft_histogram is not None and s.waiting.value == 3


def test_engines_without_it_have_no_query() -> None:
    for engine in ("sglang", "tgi", "trtllm"):
        assert not engine_metrics(engine).refs(SignalName.PROMPT_TOKENS_P90)


counts = st.lists(st.integers(0, 10**6), min_size=len(BOUNDS), max_size=len(BOUNDS))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=counts, added=counts)
def test_any_two_scrapes_give_the_increase_exactly(before: list[int], added: list[int]) -> None:
    state = {"c": cumulative(before)}
    tel, _ = fresh_telemetry()

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=prompt_text(state["c"]))

    src = ScrapeMetricsSource({"default/m": ["a"]}, telemetry=tel, transport=httpx.MockTransport(handler))
    src.collect([msp("m")], 1000.0)
    state["c"] = cumulative([b + a for b, a in zip(before, added, strict=True)])
    h = src.collect([msp("m")], 1015.0)["default/m"].prompt_tokens_histogram
    assert h is not None
    assert h.cumulative_counts == tuple(cumulative(added).values())
    assert all(x <= y for x, y in zip(h.cumulative_counts, h.cumulative_counts[1:], strict=False))


bad_value = st.one_of(st.sampled_from(["NaN", "-1", "+Inf", "x", "1e400", "9.1e15"]), st.floats().map(repr))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(per_bucket=counts, bad_at=st.integers(0, len(BOUNDS) - 1), bad=bad_value)
def test_a_garbled_bucket_never_becomes_a_number(per_bucket: list[int], bad_at: int, bad: str) -> None:
    c = {le: str(v) for le, v in cumulative(per_bucket).items()}
    c[BOUNDS[bad_at]] = bad
    try:
        m = read_pod_metrics(prompt_text(c), VLLM, "m")  # type: ignore[arg-type]
    except ExpositionError:
        return
    for le, v in m.buckets.get(SignalName.PROMPT_TOKENS_P90, {}).values():
        assert math.isfinite(v) and 0 <= v <= 2**53 and not math.isnan(le)
