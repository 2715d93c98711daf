"""One replica's /metrics text, byte-compatible with what the engine itself serves.

Rendered by prometheus_client's own text writer (`generate_latest`, format 0.0.4), as vLLM does, so
label order, float formatting (`1.0`, `8.128902e+06`, `+Inf`), `_total`/`_created` series and HELP
text come out the same. Always served as `text/plain; version=0.0.4`: under OpenMetrics negotiation
newer prometheus_client versions rewrite `vllm:` names to `vllm_`, which a real vLLM (and every
dashboard built on it) does not.

The input is anything shaped like `simulations.fleet.ReplicaSnapshot` (see `ReplicaView`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class HistogramView(Protocol):
    @property
    def bounds(self) -> tuple[float, ...]: ...
    @property
    def sum(self) -> float: ...
    def cumulative(self) -> tuple[int, ...]: ...


class ReplicaView(Protocol):
    """What the renderers read from one replica (simulations.fleet.ReplicaSnapshot has these)."""

    @property
    def running(self) -> int: ...
    @property
    def waiting(self) -> int: ...
    @property
    def kv_cache_usage(self) -> float: ...
    @property
    def prompt_tokens(self) -> float: ...
    @property
    def generation_tokens(self) -> float: ...
    @property
    def request_success(self) -> int: ...
    @property
    def preemptions(self) -> int: ...
    @property
    def queue_time(self) -> HistogramView: ...
    @property
    def ttft(self) -> HistogramView: ...
    @property
    def e2e_latency(self) -> HistogramView: ...
    @property
    def inter_token_latency(self) -> HistogramView: ...


def _buckets(h: HistogramView) -> list[tuple[str, float]]:
    cum = h.cumulative()
    out = [(floatToGoString(b), float(c)) for b, c in zip(h.bounds, cum, strict=False)]
    out.append(("+Inf", float(cum[-1])))
    return out


class _Families:
    """Builds families with a fixed label set, plus `_created` for counters and histograms (vLLM runs
    prometheus_client in single-process mode, which emits them)."""

    def __init__(self, labelnames: Sequence[str], labelvalues: Sequence[str], created: float) -> None:
        self.names = list(labelnames)
        self.values = list(labelvalues)
        self.created = created

    def gauge(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc, labels=self.names)
        g.add_metric(self.values, float(value))
        return g

    def counter(self, name: str, doc: str, value: float, extra: Sequence[tuple[str, str, float]] = ()
                ) -> CounterMetricFamily:
        """`extra`: more series as (label name, label value, value), e.g. request_success by reason."""
        if extra:
            label = extra[0][0]
            c = CounterMetricFamily(name, doc, labels=[*self.names, label])
            for _, lv, v in extra:
                c.add_metric([*self.values, lv], float(v), created=self.created)
            return c
        c = CounterMetricFamily(name, doc, labels=self.names)
        c.add_metric(self.values, float(value), created=self.created)
        return c

    def histogram(self, name: str, doc: str, h: HistogramView) -> HistogramMetricFamily:
        fam = HistogramMetricFamily(name, doc, labels=self.names)
        fam.add_metric(self.values, _buckets(h), float(h.sum))
        fam.samples.append(Sample(name + "_created", dict(zip(self.names, self.values, strict=True)),
                                  self.created))
        return fam


def vllm_families(r: ReplicaView, model: str, created: float, engine_index: str = "0") -> list[Metric]:
    """vLLM V1's families for one replica (names, HELP text, labels `engine` and `model_name`). The
    prompt-length histogram when the view has one (`prompt_length`, vLLM's 1-2-5 token buckets)."""
    f = _Families(["model_name", "engine"], [model, engine_index], created)
    prompts: HistogramView | None = getattr(r, "prompt_length", None)
    # in vLLM's order: right after the request counter
    per_request = [f.histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", prompts)
                   ] if prompts is not None else []
    return [
        f.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", r.running),
        f.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", r.waiting),
        f.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", r.kv_cache_usage),
        f.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", r.preemptions),
        f.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", r.prompt_tokens),
        f.counter("vllm:generation_tokens", "Number of generation tokens processed.", r.generation_tokens),
        f.counter("vllm:request_success", "Count of successfully processed requests.", r.request_success,
                  extra=(("finished_reason", "stop", r.request_success), ("finished_reason", "length", 0.0),
                         ("finished_reason", "abort", 0.0))),
        *per_request,
        f.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                    r.ttft),
        f.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                    r.inter_token_latency),
        f.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                    r.e2e_latency),
        f.histogram("vllm:request_queue_time_seconds",
                    "Histogram of time spent in WAITING phase for request.", r.queue_time),
    ]


def sglang_families(r: ReplicaView, model: str, created: float, engine_index: str = "0") -> list[Metric]:
    """SGLang's names for the same numbers. The simulator's histograms carry vLLM's buckets; SGLang's
    own differ (docs/engine-metrics.md §2), so quantiles interpolate over vLLM's bucket grid here."""
    f = _Families(["model_name"], [model], created)
    return [
        f.gauge("sglang:num_running_reqs", "The number of running requests.", r.running),
        f.gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", r.waiting),
        f.gauge("sglang:token_usage", "The token usage.", r.kv_cache_usage),
        f.counter("sglang:prompt_tokens", "Number of prefill tokens processed.", r.prompt_tokens),
        f.counter("sglang:generation_tokens", "Number of generation tokens processed.", r.generation_tokens),
        f.counter("sglang:num_requests", "The number of processed requests.", r.request_success),
        f.histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                    r.ttft),
        f.histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
                    r.inter_token_latency),
        f.histogram("sglang:e2e_request_latency_seconds",
                    "Histogram of End-to-end request latency in seconds", r.e2e_latency),
        f.histogram("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", r.queue_time),
    ]


def tgi_families(r: ReplicaView, model: str, created: float, engine_index: str = "0") -> list[Metric]:
    """TGI's names (no model label; TGI's router is not prometheus_client, but the 0.0.4 text is the
    same format). Token totals are the `_sum` of TGI's per-request length histograms."""
    f = _Families([], [], created)
    prompt = GaugeMetricFamily("tgi_request_input_length_sum", "Sum of input lengths", value=r.prompt_tokens)
    gen = GaugeMetricFamily("tgi_request_generated_tokens_sum", "Sum of generated tokens",
                            value=r.generation_tokens)
    for fam in (prompt, gen):
        fam.type = "untyped"
    return [
        f.gauge("tgi_batch_current_size", "Current batch size", r.running),
        f.gauge("tgi_queue_size", "Current queue size", r.waiting),
        f.counter("tgi_request_success", "Number of successful requests", r.request_success),
        prompt,
        gen,
        f.histogram("tgi_request_queue_duration", "Time spent in the queue per request", r.queue_time),
        f.histogram("tgi_request_duration", "End-to-end generate request latency", r.e2e_latency),
        f.histogram("tgi_request_mean_time_per_token_duration", "Mean time per token per request",
                    r.inter_token_latency),
    ]


Renderer = Callable[[ReplicaView, str, float, str], list[Metric]]
RENDERERS: dict[str, Renderer] = {"vllm": vllm_families, "sglang": sglang_families, "tgi": tgi_families}


class _Static:
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def render(r: ReplicaView, *, model: str, engine: str = "vllm", created: float = 0.0,
           engine_index: str = "0") -> bytes:
    """The replica's /metrics body in text format 0.0.4."""
    try:
        families = RENDERERS[engine](r, model, created, engine_index)
    except KeyError:
        known = ", ".join(RENDERERS)
        raise ValueError(f"no exposition for engine {engine!r}; choose one of {known}") from None
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Static(families))
    return generate_latest(reg)


GATEWAY_METRIC = "inference_autoscaler_emulator_gateway_requests"


def render_gateway(in_flight: float, *, model: str, namespace: str) -> bytes:
    """The emulated gateway's /metrics: its outstanding requests (arrived, neither finished nor aborted;
    those held while no replica serves included), the count a `scaleFromZero.query` reads."""
    g = GaugeMetricFamily(GATEWAY_METRIC, "Requests at the emulated gateway in front of the replicas, held "
                          "ones included.", labels=["model_name", "namespace"])
    g.add_metric([model, namespace], float(in_flight))
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Static([g]))
    return generate_latest(reg)
