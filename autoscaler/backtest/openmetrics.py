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


Sample = tuple[str, str, dict[str, str], float, float]  # (family, type, labels, timestamp, value)


class _Replicas:
    """Each replica's counters so far: tokens, requests, and the queue-time histogram's buckets and sum."""

    def __init__(self, n: int) -> None:
        self.prompt = np.zeros(n)
        self.gen = np.zeros(n)
        self.requests = np.zeros(n)
        self.queue = np.zeros((n, len(REQUEST_LATENCY_BUCKETS) + 1))
        self.queue_sum = np.zeros(n)

    def serve(self, r: int, prompt: float, gen: float, n: int, spec: HistorySpec) -> tuple[float, float]:
        """Replica `r` serves `n` requests this step; returns its (running, waiting) gauges."""
        self.prompt[r] += prompt
        self.gen[r] += gen
        self.requests[r] += n
        if not n:
            return 0.0, 0.0
        # Queueing: prefill work beyond one step's capacity waits; spread it over the step's requests.
        step = spec.step_seconds
        load = prompt / (spec.prompt_tokens_per_second * step)
        wait = max(0.0, (load - 0.8) * step)
        self.queue[r, int(np.searchsorted(REQUEST_LATENCY_BUCKETS, wait))] += n
        self.queue_sum[r] += wait * n
        return gen * spec.decode_seconds_per_token / step, max(0.0, load - 1.0) * n

    def samples(self, r: int, base: dict[str, str], t: float, running: float, waiting: float) -> Iterator[Sample]:
        yield "vllm:num_requests_running", "gauge", base, t, round(running, 3)
        yield "vllm:num_requests_waiting", "gauge", base, t, round(waiting, 3)
        yield "vllm:kv_cache_usage_perc", "gauge", base, t, min(1.0, round(running / 64, 4))
        yield "vllm:prompt_tokens", "counter", base, t, float(self.prompt[r])
        yield "vllm:generation_tokens", "counter", base, t, float(self.gen[r])
        yield "vllm:request_success", "counter", {**base, "finished_reason": "stop"}, t, float(self.requests[r])
        cum = np.cumsum(self.queue[r])
        for j, le in enumerate(REQUEST_LATENCY_BUCKETS):
            yield "vllm:request_queue_time_seconds", "histogram", {**base, "le": _fmt(le)}, t, float(cum[j])
        yield "vllm:request_queue_time_seconds", "histogram", {**base, "le": "+Inf"}, t, float(cum[-1])
        yield "vllm:request_queue_time_seconds", "histogram_count", base, t, float(cum[-1])
        yield "vllm:request_queue_time_seconds", "histogram_sum", base, t, float(self.queue_sum[r])


def replica_samples(
    arrival_s: np.ndarray, prompt: np.ndarray, output: np.ndarray, start_epoch: float, spec: HistorySpec,
    replicas_at: Callable[[float], int],
) -> Iterator[Sample]:
    """(family, type, labels, timestamp, value) samples, family by family is NOT guaranteed: callers group.

    Samples are yielded per step for every replica that exists at that step.
    """
    step = spec.step_seconds
    duration = float(arrival_s[-1]) if len(arrival_s) else 0.0
    nsteps = int(duration // step) + 2
    idx = np.minimum((arrival_s // step).astype(np.int64), nsteps - 1)
    fleet = _Replicas(max(replicas_at(k * step) for k in range(nsteps)))
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(nsteps + 1))
    seq = 0
    for k in range(nsteps):
        n_rep = max(1, replicas_at(k * step))
        sel = order[bounds[k]:bounds[k + 1]]
        reps = (np.arange(seq, seq + len(sel)) % n_rep).astype(np.int64)
        seq += len(sel)
        gauges = []
        for r in range(n_rep):
            mine = sel[reps == r]
            gauges.append(fleet.serve(r, float(prompt[mine].sum()), float(output[mine].sum()), len(mine), spec))
        t = start_epoch + (k + 1) * step
        for r, (running, waiting) in enumerate(gauges):
            base = {"model_name": spec.model, "engine": "0", "namespace": spec.namespace,
                    "instance": f"replica-{r}", "job": "vllm"}
            yield from fleet.samples(r, base, t, running, waiting)


# The sample name of each type's lines: a counter's `_total`, a histogram's `_bucket`, `_count` and `_sum`.
_SUFFIX = {"counter": "_total", "histogram": "_bucket", "histogram_count": "_count", "histogram_sum": "_sum"}


def write_openmetrics(out: TextIO, samples: Iterable[Sample]) -> int:
    """Write samples grouped by family (OpenMetrics requires each family's lines together), `# EOF`
    terminated. Returns the number of sample lines."""
    families: dict[str, tuple[str, list[str]]] = {}
    for fam, kind, labels, t, v in samples:
        base_kind = "histogram" if kind.startswith("histogram") else kind
        lines = families.setdefault(fam, (base_kind, []))[1]
        lines.append(f"{fam}{_SUFFIX.get(kind, '')}{_labels(labels)} {_fmt(v)} {t:.3f}")
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
