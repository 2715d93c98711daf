"""Prometheus history from a request trace, as OpenMetrics text for `promtool tsdb create-blocks-from
openmetrics`: per-replica vLLM counters, gauges and the queue-time histogram at a fixed step.

Used to load a real Prometheus with months-old history for backtests and benchmarks. The numbers are a
bookkeeping replay, not a serving simulation: every request is served in the step it arrives in, by
replica `i mod replicas(t)`, so counters are exact sums of the trace, `running` is requests in the step
× their decode time, and queue time comes from how far the step's work exceeds the replicas' capacity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

REQUEST_LATENCY_BUCKETS: tuple[float, ...] = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
    960.0, 1920.0, 7680.0,
)


@dataclass(frozen=True, slots=True)
class HistorySpec:
    model: str
    namespace: str = "default"
    step_seconds: float = 15.0
    prompt_tokens_per_second: float = 15000.0  # per replica, to derive queueing
    decode_seconds_per_token: float = 0.02


def _fmt(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else ("+Inf" if v > 0 else "NaN")


def _labels(d: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(d.items())) + "}"


def replica_samples(
    arrival_s: np.ndarray, prompt: np.ndarray, output: np.ndarray, start_epoch: float, spec: HistorySpec,
    replicas_at: Callable[[float], int],
) -> Iterator[tuple[str, str, dict[str, str], float, float]]:
    """(family, type, labels, timestamp, value) samples, family by family is NOT guaranteed: callers group.

    Samples are yielded per step for every replica that exists at that step.
    """
    step = spec.step_seconds
    duration = float(arrival_s[-1]) if len(arrival_s) else 0.0
    nsteps = int(duration // step) + 2
    idx = np.minimum((arrival_s // step).astype(np.int64), nsteps - 1)
    max_rep = max(replicas_at(k * step) for k in range(nsteps))
    cum_prompt = np.zeros(max_rep)
    cum_gen = np.zeros(max_rep)
    cum_req = np.zeros(max_rep)
    cum_queue = np.zeros((max_rep, len(REQUEST_LATENCY_BUCKETS) + 1))
    queue_sum = np.zeros(max_rep)
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(nsteps + 1))
    seq = 0
    for k in range(nsteps):
        n_rep = max(1, replicas_at(k * step))
        sel = order[bounds[k]:bounds[k + 1]]
        reps = (np.arange(seq, seq + len(sel)) % n_rep).astype(np.int64)
        seq += len(sel)
        running = np.zeros(n_rep)
        waiting = np.zeros(n_rep)
        for r in range(n_rep):
            mine = sel[reps == r]
            p = float(prompt[mine].sum())
            g = float(output[mine].sum())
            cum_prompt[r] += p
            cum_gen[r] += g
            cum_req[r] += len(mine)
            # Queueing: prefill work beyond one step's capacity waits; spread it over the step's requests.
            load = p / (spec.prompt_tokens_per_second * step)
            wait = max(0.0, (load - 0.8) * step) if len(mine) else 0.0
            b = int(np.searchsorted(REQUEST_LATENCY_BUCKETS, wait))
            cum_queue[r, b] += len(mine)
            queue_sum[r] += wait * len(mine)
            running[r] = g * spec.decode_seconds_per_token / step if len(mine) else 0.0
            waiting[r] = max(0.0, load - 1.0) * len(mine)
        t = start_epoch + (k + 1) * step
        for r in range(n_rep):
            base = {"model_name": spec.model, "engine": "0", "namespace": spec.namespace,
                    "instance": f"replica-{r}", "job": "vllm"}
            yield "vllm:num_requests_running", "gauge", base, t, round(float(running[r]), 3)
            yield "vllm:num_requests_waiting", "gauge", base, t, round(float(waiting[r]), 3)
            yield "vllm:kv_cache_usage_perc", "gauge", base, t, min(1.0, round(float(running[r]) / 64, 4))
            yield "vllm:prompt_tokens", "counter", base, t, float(cum_prompt[r])
            yield "vllm:generation_tokens", "counter", base, t, float(cum_gen[r])
            yield "vllm:request_success", "counter", {**base, "finished_reason": "stop"}, t, float(cum_req[r])
            cum = np.cumsum(cum_queue[r])
            for j, le in enumerate(REQUEST_LATENCY_BUCKETS):
                yield ("vllm:request_queue_time_seconds", "histogram", {**base, "le": _fmt(le)}, t,
                       float(cum[j]))
            yield "vllm:request_queue_time_seconds", "histogram", {**base, "le": "+Inf"}, t, float(cum[-1])
            yield "vllm:request_queue_time_seconds", "histogram_count", base, t, float(cum[-1])
            yield "vllm:request_queue_time_seconds", "histogram_sum", base, t, float(queue_sum[r])


def write_openmetrics(out: TextIO, samples: Iterable[tuple[str, str, dict[str, str], float, float]]) -> int:
    """Write samples grouped by family (OpenMetrics requires each family's lines together), `# EOF`
    terminated. Returns the number of sample lines."""
    families: dict[str, tuple[str, list[str]]] = {}
    for fam, kind, labels, t, v in samples:
        base_kind = "histogram" if kind.startswith("histogram") else kind
        lines = families.setdefault(fam, (base_kind, []))[1]
        if kind == "counter":
            name = fam + "_total"
        elif kind == "histogram":
            name = fam + "_bucket"
        elif kind == "histogram_count":
            name = fam + "_count"
        elif kind == "histogram_sum":
            name = fam + "_sum"
        else:
            name = fam
        lines.append(f"{name}{_labels(labels)} {_fmt(v)} {t:.3f}")
    n = 0
    for fam, (kind, lines) in families.items():
        out.write(f"# TYPE {fam} {kind}\n")
        # promtool wants each series' samples in time order: group by series, keep their time order.
        by_series: dict[str, list[str]] = {}
        for line in lines:
            by_series.setdefault(line.rsplit(" ", 2)[0], []).append(line)
        for series_lines in by_series.values():
            out.write("\n".join(series_lines) + "\n")
            n += len(series_lines)
    out.write("# EOF\n")
    return n


def history_file(path: str | Path, arrival_s: np.ndarray, prompt: np.ndarray, output: np.ndarray,
                 start_epoch: float, spec: HistorySpec, replicas_at: Callable[[float], int]) -> int:
    with Path(path).open("w") as f:
        return write_openmetrics(f, replica_samples(arrival_s, prompt, output, start_epoch, spec, replicas_at))
