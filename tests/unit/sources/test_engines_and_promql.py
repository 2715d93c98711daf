"""The engine table and the batched PromQL built from it."""

from __future__ import annotations

import pytest

from autoscaler.policy import ENGINES as POLICY_ENGINES
from autoscaler.sources.engines import ENGINES, EngineMetrics, MetricRef, SignalName, engine_metrics
from autoscaler.sources.promql import FRESHNESS, REPLICAS, PromQLBuilder, promql_string, regex_literal

from .helpers import msp


def test_every_engine_a_policy_can_name_has_a_table_entry() -> None:
    assert set(POLICY_ENGINES) <= set(ENGINES)


def test_every_engine_exposes_a_queue_gauge() -> None:
    for e in ENGINES.values():
        assert e.refs(SignalName.WAITING), e.engine


def test_unknown_engine_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="sglang"):
        engine_metrics("llamacpp")


def test_vllm_kv_usage_prefers_the_new_name_and_falls_back_to_the_old() -> None:
    q = PromQLBuilder().signal_query(engine_metrics("vllm"), SignalName.KV_CACHE_USAGE, models=["m"])
    assert q is not None
    assert q.index("vllm:kv_cache_usage_perc") < q.index(" or ") < q.index("vllm:gpu_cache_usage_perc")


def test_rates_sum_across_data_parallel_engines_by_namespace_and_model() -> None:
    q = PromQLBuilder().signal_query(engine_metrics("vllm"), SignalName.PROMPT_TOKENS_RATE, models=["m"])
    assert q == 'sum by (namespace, model_name) (rate(vllm:prompt_tokens_total{model_name="m"}[1m]))'


def test_queue_time_is_a_p90_over_buckets_summed_by_le() -> None:
    q = PromQLBuilder().signal_query(engine_metrics("vllm"), SignalName.QUEUE_TIME_P90, models=["m"])
    assert q == ('histogram_quantile(0.9, sum by (le, namespace, model_name) '
                 '(rate(vllm:request_queue_time_seconds_bucket{model_name="m"}[1m])))')


def test_histogram_buckets_are_increases_summed_by_le_namespace_and_model() -> None:
    q = PromQLBuilder().bucket_query(engine_metrics("vllm"), SignalName.TTFT_P90, models=["a", "b"])
    assert q == ('sum by (le, namespace, model_name) '
                 '(increase(vllm:time_to_first_token_seconds_bucket{model_name=~"a|b"}[1m]))')


def test_bucket_queries_keep_the_selector_window_and_or_alternatives() -> None:
    engine = EngineMetrics("x", "model", {SignalName.QUEUE_TIME_P90: (
        MetricRef("new_queue_seconds"), MetricRef("old_queue", (("kind", "queue"),)))})
    q = PromQLBuilder(window="20s").bucket_query(engine, SignalName.QUEUE_TIME_P90, (("cluster", "c1"),), ["m"])
    assert q == ('sum by (le, namespace, model) (increase(new_queue_seconds_bucket{cluster="c1",model="m"}[20s]))'
                 ' or sum by (le, namespace, model) '
                 '(increase(old_queue_bucket{kind="queue",cluster="c1",model="m"}[20s]))')


def test_only_quantile_signals_have_bucket_queries() -> None:
    b = PromQLBuilder()
    assert b.bucket_query(engine_metrics("vllm"), SignalName.WAITING) is None
    assert b.bucket_query(engine_metrics("tgi"), SignalName.TTFT_P90) is None
    assert b.bucket_query(engine_metrics("tgi"), SignalName.QUEUE_TIME_P90) == (
        "sum by (le, namespace) (increase(tgi_request_queue_duration_bucket[1m]))")


def test_the_plan_fetches_buckets_for_quantile_signals_instead_of_a_server_side_p90() -> None:
    plan = PromQLBuilder().plan([msp("m")], "http://prom:9090")
    buckets = {q.signal: q.promql for q in plan.queries if q.shape == "buckets"}
    assert set(buckets) == {SignalName.QUEUE_TIME_P90.value, SignalName.TTFT_P90.value,
                            SignalName.PROMPT_TOKENS_P90.value}
    assert "increase(vllm:request_prompt_tokens_bucket{" in buckets[SignalName.PROMPT_TOKENS_P90.value]
    assert all(q.startswith("sum by (le, ") and "increase(" in q for q in buckets.values())
    assert not any("histogram_quantile" in q.promql for q in plan.queries)


def test_signals_an_engine_lacks_have_no_query() -> None:
    assert PromQLBuilder().signal_query(engine_metrics("tgi"), SignalName.TTFT_P90) is None


def test_engine_without_model_label_groups_by_namespace_only() -> None:
    q = PromQLBuilder().signal_query(engine_metrics("tgi"), SignalName.WAITING, models=["x"])
    assert q == "sum by (namespace) (tgi_queue_size)"


def test_thousand_policies_sharing_a_selector_make_one_query_per_signal() -> None:
    policies = [msp(f"m{i}") for i in range(1000)]
    plan = PromQLBuilder().plan(policies, "http://prom:9090")
    assert len(plan.groups) == 1
    assert len(plan.queries) == len(SignalName) + 1  # + freshness; p90s come from the bucket queries
    assert sum(q.signal == FRESHNESS for q in plan.queries) == 1


def test_policies_with_different_selectors_or_engines_get_separate_queries() -> None:
    policies = [msp("a"), msp("b", selector={"cluster": "x"}), msp("c", selector={"cluster": "x"}),
                msp("d", engine="sglang")]
    plan = PromQLBuilder().plan(policies, "http://prom:9090")
    assert sorted(len(v) for v in plan.groups.values()) == [1, 1, 2]
    selected = [q.promql for q in plan.queries if q.group.selector == (("cluster", "x"),)]
    assert selected and all('cluster="x"' in q for q in selected)


def test_a_policy_prometheus_url_overrides_the_default() -> None:
    plan = PromQLBuilder().plan([msp("a"), msp("b", url="http://other:9090/")], "http://prom:9090")
    assert {g.url for g in plan.groups} == {"http://prom:9090", "http://other:9090"}


def test_replicas_query_counts_instances_not_dp_engines() -> None:
    q = PromQLBuilder().replicas_query(engine_metrics("vllm"), models=["m"])
    assert q == ('count by (namespace, model_name) (count by (namespace, model_name, instance) '
                 '(vllm:num_requests_waiting{model_name="m"}))')
    plan = PromQLBuilder().plan([msp("a")], "http://p", extra=(REPLICAS,))
    assert [q.signal for q in plan.queries if q.signal == REPLICAS] == [REPLICAS]


def test_model_names_are_escaped_for_regex_and_string() -> None:
    q = PromQLBuilder().signal_query(engine_metrics("vllm"), SignalName.WAITING,
                                     models=['meta-llama/Llama-3.1-8B', 'a"b\\c'])
    assert q is not None
    assert 'model_name=~"a\\"b\\\\\\\\c|meta-llama/Llama-3\\\\.1-8B"' in q
    assert promql_string('x"y') == '"x\\"y"'
    assert regex_literal("a.b|c") == "a\\.b\\|c"


def test_namespace_label_can_be_turned_off() -> None:
    b = PromQLBuilder(namespace_label=None)
    q = b.signal_query(engine_metrics("vllm"), SignalName.WAITING, models=["m"])
    assert q == 'sum by (model_name) (vllm:num_requests_waiting{model_name="m"})'
    assert b.series_key(engine_metrics("vllm"), {"namespace": "x", "model_name": "m"}) == ("", "m")
