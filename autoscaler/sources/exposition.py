"""Reading one pod's /metrics text (Prometheus text format 0.0.4) into the raw numbers a model needs.

`read_pod_metrics` never raises on bad input: garbage, truncated text or odd values give an
`ExpositionError` (or drop just the bad series, counted), never an invented number. Only the lines of
the series a model needs are parsed (with prometheus_client's parser); a malformed line elsewhere on the
page is ignored rather than failing the pod.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from autoscaler.sources.engines import SIGNAL_KIND, EngineMetrics, MetricRef, SignalName
from autoscaler.sources.histogram import parse_le


class ExpositionError(ValueError):
    """The text is not a parseable Prometheus exposition."""


# A raw series: (metric sample name, sorted labels without the model label). Counters and bucket
# series keep their identity so rates are computed per series (a reset in one DP engine's counter
# must not hide another's growth).
SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(slots=True)
class PodMetrics:
    """One scrape of one pod, reduced to one model's series."""

    gauges: dict[SignalName, tuple[float, int]] = field(default_factory=dict)  # (sum over series, n)
    counters: dict[SignalName, dict[SeriesKey, float]] = field(default_factory=dict)
    # bucket series -> (le, cumulative count)
    buckets: dict[SignalName, dict[SeriesKey, tuple[float, float]]] = field(default_factory=dict)
    dropped_non_finite: int = 0
    dropped_negative: int = 0


def _matches(labels: dict[str, str], ref: MetricRef) -> bool:
    return all(labels.get(k) == v for k, v in ref.matchers)


def _sample_name(line: str) -> str:
    if not line or line[0] == "#":
        return ""
    end = len(line)
    for sep in ("{", " ", "\t"):
        i = line.find(sep)
        if 0 <= i < end:
            end = i
    return line[:end]


_LINE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^{}\\]*)\})?[ \t]+([^ \t_]+)(?:[ \t]+-?[0-9]+)?[ \t]*")
_LABELS = re.compile(r'(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"[^"]*"[ \t]*,?)*[ \t]*')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"([^"]*)"')


def _samples(lines: list[str]) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each line. Plain lines (no escapes in label values) take a strict regex
    fast path; anything else goes through prometheus_client's parser, which raises on bad input."""
    slow: list[str] = []
    for line in lines:
        m = _LINE.fullmatch(line)
        labels = m.group(2) if m else None
        if m is None or (labels is not None and not _LABELS.fullmatch(labels)):
            slow.append(line)
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            slow.append(line)
            continue
        pairs = _LABEL.findall(labels or "")
        if any(k.startswith("__") for k, _ in pairs):
            slow.append(line)  # reserved label names: the parser decides (it refuses them)
            continue
        yield m.group(1), dict(pairs), value
    if slow:
        for family in text_string_to_metric_families("\n".join(slow) + "\n"):
            for sample in family.samples:
                yield sample.name, dict(sample.labels), float(sample.value)


def read_pod_metrics(text: str, engine: EngineMetrics, model: str | None) -> PodMetrics:
    """The samples of `text` that belong to `model` (by the engine's model label; all samples when the
    engine has none or `model` is None), grouped by signal. Raises ExpositionError on unparseable text."""
    wanted: dict[str, list[tuple[SignalName, MetricRef, int]]] = {}
    for signal in SignalName:
        for rank, ref in enumerate(engine.refs(signal)):
            sample_name = ref.name + ("_bucket" if SIGNAL_KIND[signal] == "quantile" else "")
            wanted.setdefault(sample_name, []).append((signal, ref, rank))

    # Only the lines of wanted samples go to the (slow, character-by-character) parser: a vLLM page is
    # ~60 % other series. Comments go too; without TYPE lines the samples keep their full names.
    kept = [line for line in text.split("\n") if _sample_name(line) in wanted]
    # For each signal, samples per alternative rank; the lowest rank present wins.
    found: dict[SignalName, dict[int, list[tuple[str, dict[str, str], float]]]] = {}
    out = PodMetrics()
    try:
        for name, labels, value in _samples(kept):
            hits = wanted.get(name)
            if not hits:
                continue
            if engine.model_label and model is not None and labels.get(engine.model_label) != model:
                continue
            for signal, ref, rank in hits:
                if _matches(labels, ref):
                    found.setdefault(signal, {}).setdefault(rank, []).append((name, labels, value))
    except Exception as e:  # the parser raises ValueError, IndexError, TypeError, ... on garbage
        raise ExpositionError(f"unparseable exposition: {type(e).__name__}: {str(e)[:200]}") from None

    for signal, by_rank in found.items():
        samples = by_rank[min(by_rank)]
        kind = SIGNAL_KIND[signal]
        for name, labels, value in samples:
            if not math.isfinite(value):
                out.dropped_non_finite += 1
                continue
            if value < 0:
                out.dropped_negative += 1
                continue
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != engine.model_label))
            if kind in ("sum", "mean"):
                total, n = out.gauges.get(signal, (0.0, 0))
                out.gauges[signal] = (total + value, n + 1)
            elif kind == "rate":
                out.counters.setdefault(signal, {})[(name, rest)] = value
            else:
                le = parse_le(labels.get("le"))
                if le is None:
                    out.dropped_non_finite += 1
                    continue
                out.buckets.setdefault(signal, {})[(name, rest)] = (le, value)
    return out
