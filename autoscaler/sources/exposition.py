"""Reading one pod's /metrics text (Prometheus text format 0.0.4) into the raw numbers a model needs.

`read_pod_metrics` never raises on bad input other than with an `ExpositionError`: garbage, truncated
text or odd values give an error (or drop just the bad series, counted), never an invented number. Only
the lines of the series a model needs are parsed; a malformed line elsewhere on the page is ignored
rather than failing the pod.

The parser is a hand-written scanner over a handful of possessive (non-backtracking) token patterns, so
its time is linear in the line's length whatever a pod sends: the earlier whole-line regex backtracked
exponentially on label runs such as `{a=""    a=""    ...!}` (126 bytes took about 100 s). Lines and
pages are capped (`MAX_LINE_CHARS`, `MAX_LINES`) and the caller's deadline is checked while parsing, so
a pod's scrape is bounded in time by its deadline from the first byte to the last parsed sample.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from autoscaler.sources.engines import SIGNAL_KIND, EngineMetrics, MetricRef, SignalName
from autoscaler.sources.histogram import parse_le
from autoscaler.sources.plausible import in_range, plausible, plausible_count

# A vLLM sample line is under 300 characters; a page a few thousand lines (more with many LoRA adapters).
MAX_LINE_CHARS = 16_384
MAX_LINES = 200_000
_DEADLINE_EVERY = 2_048  # lines between deadline checks
_DEADLINE_CHARS = 262_144  # or characters parsed, whichever comes first


class ExpositionError(ValueError):
    """The text is not a parseable Prometheus exposition (or is over a cap)."""


class ExpositionTimeout(ExpositionError):
    """Parsing did not finish before the pod's deadline."""


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
    # Signals with a NaN, negative or implausible sample on this page: the pod's value for them is
    # unknown (a partial sum would read as less load), so the sources report them missing.
    tainted: set[SignalName] = field(default_factory=set)
    dropped_non_finite: int = 0
    dropped_negative: int = 0
    dropped_implausible: int = 0


def _matches(labels: dict[str, str], ref: MetricRef) -> bool:
    return all(labels.get(k) == v for k, v in ref.matchers)


def _sample_name(line: str) -> str:
    if not line or line[0] == "#":
        return ""
    end = len(line)
    for sep in ("{", " ", "\t"):
        i = line.find(sep, 0, end)
        if i >= 0:
            end = i
    return line[:end]


# Token patterns. Every quantifier is possessive (`*+`, `++`): a pattern never gives back what it matched,
# so each token costs time linear in its length and a failed line fails at once.
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*+")
_WS = re.compile(r"[ \t]*+")
_LABEL = re.compile(r'[ \t]*+([a-zA-Z_][a-zA-Z0-9_]*+)[ \t]*+=[ \t]*+"((?:[^"\\]++|\\.)*+)"[ \t]*+')
_NUMBER = re.compile(
    r"[+-]?+(?:(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+|(?i:inf(?:inity)?+|nan))"
)


def _skip_ws(line: str, pos: int) -> int:
    m = _WS.match(line, pos)
    return m.end() if m else pos


def _unescape(raw: str) -> str:
    """A label value with Prometheus's escapes undone: \\\\, \\n and \\" are escapes; any other backslash
    pair is kept as written. Splitting on escaped backslashes first (left to right, as a scanner would
    pair them) leaves pieces in which `\\n` and `\\"` cannot overlap; all string operations, no per-escape
    Python call."""
    if "\\" not in raw:
        return raw
    return "\\".join(p.replace("\\n", "\n").replace('\\"', '"') for p in raw.split("\\\\"))


def parse_sample(line: str) -> tuple[str, dict[str, str], float]:
    """(name, labels, value) of one sample line; ValueError when it is not one. Linear in len(line)."""
    if len(line) > MAX_LINE_CHARS:
        raise ValueError(f"sample line over {MAX_LINE_CHARS} characters")
    m = _NAME.match(line)
    if m is None:
        raise ValueError("no metric name")
    name, pos = m.group(), _skip_ws(line, m.end())
    labels: dict[str, str] = {}
    spaced = pos > m.end()  # whitespace between the name (or label set) and the value
    if pos < len(line) and line[pos] == "{":
        pos += 1
        while True:
            pos = _skip_ws(line, pos)
            if pos < len(line) and line[pos] == "}":
                break
            lm = _LABEL.match(line, pos)
            if lm is None:
                raise ValueError(f"bad label at column {pos}")
            key = lm.group(1)
            if key.startswith("__"):
                raise ValueError(f"reserved label name {key!r}")
            if key in labels:
                raise ValueError(f"duplicate label {key!r}")
            labels[key] = _unescape(lm.group(2))
            pos = lm.end()
            if pos < len(line) and line[pos] == ",":
                pos += 1
            elif pos >= len(line) or line[pos] != "}":
                raise ValueError(f"expected ',' or '}}' at column {pos}")
        pos += 1
        ws = _skip_ws(line, pos)
        spaced, pos = ws > pos, ws
    if not spaced:
        raise ValueError(f"expected a space before the value at column {pos}")
    vm = _NUMBER.match(line, pos)
    if vm is None:
        raise ValueError(f"bad value at column {pos}")
    value = float(vm.group())
    pos = _skip_ws(line, vm.end())
    if pos < len(line):
        if pos == vm.end():
            raise ValueError(f"expected a space after the value at column {pos}")
        tm = _NUMBER.match(line, pos)  # the timestamp (ignored: the scrape's time is the tick's)
        if tm is None or _skip_ws(line, tm.end()) != len(line):
            raise ValueError(f"bad timestamp at column {pos}")
    return name, labels, value


# The shape exporters write (no spaces inside the label set, no escapes), matched whole in one step; any
# other line goes through the scanner. Possessive too, and each repetition starts with a comma, so a line
# is matched or refused in linear time.
_PAIR = r'[a-zA-Z_][a-zA-Z0-9_]*+="[^"\\]*+"'
_FAST = re.compile(rf"([a-zA-Z_:][a-zA-Z0-9_:]*+)(?:\{{((?:{_PAIR}(?:,{_PAIR})*+,?+)?+)\}})?+ ([^ ]++)(?: -?[0-9]++)?+")
_FAST_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*+)="([^"\\]*+)"')


def read_sample(line: str) -> tuple[str, dict[str, str], float]:
    """`parse_sample(line)`, with the common exporter shape read by one whole-line match."""
    if len(line) > MAX_LINE_CHARS:
        raise ValueError(f"sample line over {MAX_LINE_CHARS} characters")
    m = _FAST.fullmatch(line)
    if m is not None and _NUMBER.fullmatch(m.group(3)):
        raw = m.group(2)
        pairs = _FAST_PAIR.findall(raw) if raw else []
        labels = dict(pairs)
        if len(labels) == len(pairs) and not any(k.startswith("__") for k in labels):
            return m.group(1), labels, float(m.group(3))
    return parse_sample(line)


def _samples(lines: list[str]) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each line; ValueError on the first line that is not a sample."""
    for line in lines:
        yield read_sample(line.rstrip("\r"))


_Sample = tuple[str, dict[str, str], float]
_Wanted = dict[str, list[tuple[SignalName, MetricRef, int]]]


def read_pod_metrics(text: str, engine: EngineMetrics, model: str | None, *,
                     deadline: float | None = None) -> PodMetrics:
    """The samples of `text` that belong to `model` (by the engine's model label; all samples when the
    engine has none or `model` is None), grouped by signal. Raises ExpositionError on unparseable text
    or a page over the caps, ExpositionTimeout when `time.monotonic()` passes `deadline` while parsing."""
    lines = text.split("\n", MAX_LINES)
    if len(lines) > MAX_LINES:
        raise ExpositionError(f"page has over {MAX_LINES} lines")
    wanted, clock = _wanted(engine), _Deadline(deadline)
    # Only the lines of wanted samples are parsed: a vLLM page is ~60 % other series.
    kept: list[str] = []
    for i, line in enumerate(lines):
        clock.check(i)
        if _sample_name(line) in wanted:
            kept.append(line)
    return _grouped(_found(kept, wanted, engine, model, clock), engine)


def _wanted(engine: EngineMetrics) -> _Wanted:
    """Sample name → (signal, reference, rank among the signal's alternatives) for every signal the engine has."""
    wanted: _Wanted = {}
    for signal in SignalName:
        for rank, ref in enumerate(engine.refs(signal)):
            sample_name = ref.name + ("_bucket" if SIGNAL_KIND[signal] == "quantile" else "")
            wanted.setdefault(sample_name, []).append((signal, ref, rank))
    return wanted


class _Deadline:
    """Checks `time.monotonic()` against the deadline every _DEADLINE_EVERY lines or _DEADLINE_CHARS characters."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline, self.work = deadline, 0

    def check(self, i: int, chars: int = 0) -> None:
        """Raises ExpositionTimeout once the deadline has passed (at line `i`, `chars` more parsed)."""
        self.work += chars
        if self.deadline is not None and (i % _DEADLINE_EVERY == 0 or self.work > _DEADLINE_CHARS):
            self.work = 0
            if time.monotonic() > self.deadline:
                raise ExpositionTimeout(f"parsing passed the deadline at line {i}")


def _found(kept: list[str], wanted: _Wanted, engine: EngineMetrics, model: str | None,
           clock: _Deadline) -> dict[SignalName, list[_Sample]]:
    """For each signal, the samples of its lowest-ranked alternative present on the page (and of the model)."""
    found: dict[SignalName, dict[int, list[_Sample]]] = {}
    for i, line in enumerate(kept):
        clock.check(i, len(line))
        try:
            name, labels, value = read_sample(line.rstrip("\r"))
        except ValueError as e:
            raise ExpositionError(f"unparseable exposition: {str(e)[:200]}") from None
        hits = wanted.get(name)
        if not hits:
            continue
        if engine.model_label and model is not None and labels.get(engine.model_label) != model:
            continue
        for signal, ref, rank in hits:
            if _matches(labels, ref):
                found.setdefault(signal, {}).setdefault(rank, []).append((name, labels, value))
    return {signal: by_rank[min(by_rank)] for signal, by_rank in found.items()}


def _grouped(found: dict[SignalName, list[_Sample]], engine: EngineMetrics) -> PodMetrics:
    """The samples as gauges, counters and histogram buckets; a signal with any non-finite, negative or
    implausible sample is tainted and keeps no partial numbers."""
    out = PodMetrics()
    for signal, samples in found.items():
        kind = SIGNAL_KIND[signal]
        for name, labels, value in samples:
            if not math.isfinite(value):
                out.dropped_non_finite += 1
                out.tainted.add(signal)
                continue
            if value < 0:
                out.dropped_negative += 1
                out.tainted.add(signal)
                continue
            ok = plausible(signal, value) if kind in ("sum", "mean") else plausible_count(value)
            if not ok:
                out.dropped_implausible += 1
                out.tainted.add(signal)
                continue
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != engine.model_label))
            if kind in ("sum", "mean"):
                total, n = out.gauges.get(signal, (0.0, 0))
                out.gauges[signal] = (total + in_range(signal, value), n + 1)
            elif kind == "rate":
                out.counters.setdefault(signal, {})[(name, rest)] = value
            else:
                le = parse_le(labels.get("le"))
                if le is None:
                    out.dropped_non_finite += 1
                    out.tainted.add(signal)
                    continue
                out.buckets.setdefault(signal, {})[(name, rest)] = (le, value)
    for signal in out.tainted:  # no partial numbers for a signal with a bad sample
        out.gauges.pop(signal, None)
        out.counters.pop(signal, None)
        out.buckets.pop(signal, None)
    return out
