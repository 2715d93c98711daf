"""What each inference engine calls the signals the core needs: a table, not a branch per engine.

Every engine maps onto the same `SignalName`s. A signal lists one or more `MetricRef` alternatives in
order of preference (renames across versions, e.g. vLLM `kv_cache_usage_perc` vs the older
`gpu_cache_usage_perc`); the Prometheus source joins them with PromQL `or`, the scrape source takes the
first one present. Adding an engine is adding an entry to `ENGINES`.

Names are as exposed on the wire (counters with `_total`, histograms by their base name; the `_bucket`
series is derived). Sources: docs/engine-metrics.md (the engines' own code and docs, by file and commit).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal


class SignalName(str, Enum):
    """The load signals of `autoscaler.core.signals.Signals`, one per field of the same name."""

    REQUEST_RATE = "request_rate"
    PROMPT_TOKENS_RATE = "prompt_tokens_rate"
    GENERATION_TOKENS_RATE = "generation_tokens_rate"
    RUNNING = "running"
    WAITING = "waiting"
    KV_CACHE_USAGE = "kv_cache_usage"
    QUEUE_TIME_P90 = "queue_time_p90_seconds"
    TTFT_P90 = "ttft_p90_seconds"
    # Prompt length (tokens) per request; its histogram says what share of requests is too long for the TTFT
    # SLO on an idle replica (core/stages/feasibility.py). Optional: no engine but vLLM exposes it.
    PROMPT_TOKENS_P90 = "prompt_tokens_p90"


# How replicas' values combine into one value per model:
#   rate:     a counter's per-second increase, summed over replicas (and DP engines)
#   sum:      a gauge summed over replicas (and DP engines)
#   mean:     a gauge averaged over replicas (a fraction such as KV-cache use)
#   quantile: a histogram quantile over the buckets of all replicas
Kind = Literal["rate", "sum", "mean", "quantile"]

SIGNAL_KIND: dict[SignalName, Kind] = {
    SignalName.REQUEST_RATE: "rate",
    SignalName.PROMPT_TOKENS_RATE: "rate",
    SignalName.GENERATION_TOKENS_RATE: "rate",
    SignalName.RUNNING: "sum",
    SignalName.WAITING: "sum",
    SignalName.KV_CACHE_USAGE: "mean",
    SignalName.QUEUE_TIME_P90: "quantile",
    SignalName.TTFT_P90: "quantile",
    SignalName.PROMPT_TOKENS_P90: "quantile",
}

QUANTILE = 0.9  # the quantile of the *_p90 signals


@dataclass(frozen=True, slots=True)
class MetricRef:
    """One metric as exposed, with label matchers that pick the right series out of a shared family
    (e.g. Triton's `nv_trt_llm_request_metrics{request_type="waiting"}`)."""

    name: str
    matchers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class EngineMetrics:
    """How one engine exposes the signals. A signal absent from `signals` is not exposed by the engine
    and is always MISSING for its models."""

    engine: str
    # Label that carries the served model's name, or None when the engine has none (TGI serves one
    # model per server): then the policy's labelSelector alone must pick the model's series.
    model_label: str | None
    signals: dict[SignalName, tuple[MetricRef, ...]]
    # Labels that split one replica's series and must be summed away (vLLM's DP `engine` index).
    split_labels: tuple[str, ...] = ()

    def refs(self, signal: SignalName) -> tuple[MetricRef, ...]:
        return self.signals.get(signal, ())


def _refs(*names: str) -> tuple[MetricRef, ...]:
    return tuple(MetricRef(n) for n in names)


VLLM = EngineMetrics(
    engine="vllm",
    model_label="model_name",
    split_labels=("engine", "finished_reason"),
    signals={
        SignalName.REQUEST_RATE: _refs("vllm:request_success_total"),
        SignalName.PROMPT_TOKENS_RATE: _refs("vllm:prompt_tokens_total"),
        SignalName.GENERATION_TOKENS_RATE: _refs("vllm:generation_tokens_total"),
        SignalName.RUNNING: _refs("vllm:num_requests_running"),
        SignalName.WAITING: _refs("vllm:num_requests_waiting"),
        SignalName.KV_CACHE_USAGE: _refs("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        SignalName.QUEUE_TIME_P90: _refs("vllm:request_queue_time_seconds"),
        SignalName.TTFT_P90: _refs("vllm:time_to_first_token_seconds"),
        SignalName.PROMPT_TOKENS_P90: _refs("vllm:request_prompt_tokens"),
    },
)

SGLANG = EngineMetrics(
    engine="sglang",
    model_label="model_name",
    split_labels=("engine_type", "tp_rank", "pp_rank", "moe_ep_rank"),
    signals={
        SignalName.REQUEST_RATE: _refs("sglang:num_requests_total"),
        SignalName.PROMPT_TOKENS_RATE: _refs("sglang:prompt_tokens_total"),
        SignalName.GENERATION_TOKENS_RATE: _refs("sglang:generation_tokens_total"),
        SignalName.RUNNING: _refs("sglang:num_running_reqs"),
        SignalName.WAITING: _refs("sglang:num_queue_reqs"),
        SignalName.KV_CACHE_USAGE: _refs("sglang:token_usage"),
        SignalName.QUEUE_TIME_P90: _refs("sglang:queue_time_seconds"),
        SignalName.TTFT_P90: _refs("sglang:time_to_first_token_seconds"),
    },
)

# TGI: no model label; counters have no `_total` suffix; no KV-cache gauge, no TTFT histogram.
# Tokens: `tgi_request_input_length` / `tgi_request_generated_tokens` are histograms whose `_sum`
# series is a cumulative token counter.
TGI = EngineMetrics(
    engine="tgi",
    model_label=None,
    signals={
        SignalName.REQUEST_RATE: _refs("tgi_request_success"),
        SignalName.PROMPT_TOKENS_RATE: _refs("tgi_request_input_length_sum"),
        SignalName.GENERATION_TOKENS_RATE: _refs("tgi_request_generated_tokens_sum"),
        SignalName.RUNNING: _refs("tgi_batch_current_size"),
        SignalName.WAITING: _refs("tgi_queue_size"),
        SignalName.QUEUE_TIME_P90: _refs("tgi_request_queue_duration"),
    },
)

# TensorRT-LLM behind Triton (`nv_trt_llm_*`, label `model`), falling back to trtllm-serve's names.
# Neither exposes token counters or latency histograms, so demand rates are MISSING and the core
# applies onMissingMetrics; request rate comes from Triton's core counter.
TRTLLM = EngineMetrics(
    engine="trtllm",
    model_label="model",
    signals={
        SignalName.REQUEST_RATE: _refs("nv_inference_request_success"),
        SignalName.RUNNING: (
            MetricRef("nv_trt_llm_request_metrics", (("request_type", "scheduled"),)),
            MetricRef("trtllm_num_requests_running"),
        ),
        SignalName.WAITING: (
            MetricRef("nv_trt_llm_request_metrics", (("request_type", "waiting"),)),
            MetricRef("trtllm_num_requests_waiting"),
        ),
        SignalName.KV_CACHE_USAGE: (
            MetricRef("nv_trt_llm_kv_cache_block_metrics", (("kv_cache_block_type", "fraction"),)),
            MetricRef("trtllm_kv_cache_utilization"),
        ),
    },
)

ENGINES: dict[str, EngineMetrics] = {e.engine: e for e in (VLLM, SGLANG, TGI, TRTLLM)}


def engine_metrics(engine: str) -> EngineMetrics:
    try:
        return ENGINES[engine]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(sorted(ENGINES))}") from None
