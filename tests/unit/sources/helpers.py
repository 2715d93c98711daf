"""Builders shared by the metric-source tests: policies, Prometheus answers, vLLM exposition text."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.telemetry import SourceTelemetry, telemetry_for


def msp(name: str = "m", *, model: str | None = None, namespace: str = "default", engine: str = "vllm",
        selector: dict[str, str] | None = None, source: str = "prometheus", fallback: bool = True,
        url: str | None = None, staleness: float = 60.0) -> ModelScalingPolicy:
    metrics: dict[str, Any] = {"source": source, "fallbackToScrape": fallback, "stalenessSeconds": staleness}
    if selector:
        metrics["labelSelector"] = selector
    if url:
        metrics["prometheus"] = {"url": url}
    return ModelScalingPolicy.model_validate({
        "apiVersion": "autoscaler.inference.dev/v1alpha1",
        "kind": "ModelScalingPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "model": {"name": model or name, "engine": engine},
            "metrics": metrics,
        },
    })


def fresh_telemetry() -> tuple[SourceTelemetry, CollectorRegistry]:
    reg = CollectorRegistry()
    return telemetry_for(reg), reg


def error_count(reg: CollectorRegistry, source: str, kind: str) -> float:
    labels = {"source": source, "kind": kind}
    v = reg.get_sample_value("inference_autoscaler_metric_source_errors_total", labels)
    return v or 0.0


def vector(rows: Iterable[tuple[dict[str, str], float, str]]) -> dict[str, Any]:
    """A Prometheus instant-query answer: rows of (labels, timestamp, value string)."""
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": labels, "value": [t, v]} for labels, t, v in rows
    ]}}


Answer = Callable[[str], httpx.Response]


def prom_transport(answer: Answer, log: list[str] | None = None) -> httpx.MockTransport:
    """A fake Prometheus: `answer(promql)` makes the response to each /api/v1/query POST."""

    def handler(request: httpx.Request) -> httpx.Response:
        form = dict(httpx.QueryParams(request.content.decode()))
        q = form.get("query", "")
        if log is not None:
            log.append(q)
        return answer(q)

    return httpx.MockTransport(handler)


def json_response(doc: Any, status: int = 200) -> httpx.Response:
    headers = {"content-type": "application/json"}
    return httpx.Response(status, content=json.dumps(doc).encode(), headers=headers)


def vllm_text(model: str = "m", *, waiting: float = 0, running: float = 0, kv: float = 0.0,
              prompt: float = 0, generation: float = 0, success: float = 0,
              queue_buckets: dict[str, float] | None = None, engines: int = 1) -> str:
    """vLLM-style /metrics text; with `engines` > 1 each DP engine carries an equal share."""
    lines = [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
    ]
    for e in range(engines):
        lines.append(f'vllm:num_requests_running{{engine="{e}",model_name="{model}"}} {running / engines}')
    lines += ["# TYPE vllm:num_requests_waiting gauge"]
    for e in range(engines):
        lines.append(f'vllm:num_requests_waiting{{engine="{e}",model_name="{model}"}} {waiting / engines}')
    lines += ["# TYPE vllm:kv_cache_usage_perc gauge"]
    for e in range(engines):
        lines.append(f'vllm:kv_cache_usage_perc{{engine="{e}",model_name="{model}"}} {kv}')
    for name, v in (("prompt_tokens", prompt), ("generation_tokens", generation)):
        lines += [f"# TYPE vllm:{name}_total counter"]
        for e in range(engines):
            lines.append(f'vllm:{name}_total{{engine="{e}",model_name="{model}"}} {v / engines}')
    lines += ["# TYPE vllm:request_success_total counter"]
    for e in range(engines):
        labels = f'engine="{e}",finished_reason="stop",model_name="{model}"'
        lines.append(f"vllm:request_success_total{{{labels}}} {success / engines}")
    if queue_buckets is not None:
        lines += ["# TYPE vllm:request_queue_time_seconds histogram"]
        for le, c in queue_buckets.items():
            labels = f'engine="0",le="{le}",model_name="{model}"'
            lines.append(f"vllm:request_queue_time_seconds_bucket{{{labels}}} {c}")
        total = queue_buckets.get("+Inf", 0)
        lines.append(f'vllm:request_queue_time_seconds_count{{engine="0",model_name="{model}"}} {total}')
        lines.append(f'vllm:request_queue_time_seconds_sum{{engine="0",model_name="{model}"}} 0.0')
    return "\n".join(lines) + "\n"
