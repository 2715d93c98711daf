"""Seeded fuzz cases for the metric sources: scrape pages and Prometheus API bodies, and the checks each
case must pass (no exception other than the documented one, no value outside the signal's bounds, no
case slower than the limit). Shared by tests/unit/sources/test_fuzz_sources.py (a few hundred cases) and
benchmarks/fuzz_sources.py (10,000 and more).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from autoscaler.core.signals import Signals
from autoscaler.sources.engines import SignalName, engine_metrics
from autoscaler.sources.exposition import ExpositionError, read_pod_metrics
from autoscaler.sources.plausible import plausible, plausible_count
from autoscaler.sources.prom_api import PrometheusAPI
from autoscaler.sources.prometheus import PrometheusMetricsSource

from .helpers import fresh_telemetry, msp

VLLM = engine_metrics("vllm")
NAMES = ["vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
         "vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total",
         "vllm:request_queue_time_seconds_bucket", "vllm:time_to_first_token_seconds_bucket", "other_metric"]
NUMBERS = ["0", "1", "3.5", "-1", "NaN", "+Inf", "-Inf", "1e308", "1e309", "-0", "1" * 400, "9" * 5000,
           "0x10", "1_000", "1e-400", ".5", "5.", "inf", "Infinity", "nan", "", "abc", "1e", "--1", "2.5e+3"]
WS = [" ", "\t", "  ", "    ", "\t\t", ""]


def _label_value(rng: random.Random) -> str:
    return rng.choice(["m", "", "0", "+Inf", "0.5", '\\"', "\\\\", "\\n", "\\", "a\\xb", "é",
                       "x" * rng.randint(0, 300)])


def _pathological_labels(rng: random.Random) -> str:
    """Label runs of the shapes that made the old whole-line regex backtrack exponentially."""
    unit = rng.choice(['a=""', 'a="x"', 'a=""' + "," * rng.randint(0, 2), 'a = ""', 'a=""\t'])
    sep = rng.choice(WS)
    n = rng.choice([12, 30, 200, rng.randint(1, 2000)])
    tail = rng.choice(["!", "", '"', "\\", "{", "a=", 'a="', "}", ",,"])
    return "{" + (unit + sep) * n + tail + "}"


VALID_NUMBERS = ["0", "1", "3.5", "-1", "NaN", "+Inf", "-Inf", "1e308", "1e309", "-0", "1" * 400, "1e-400", ".5",
                 "5.", "2.5e+3", "1.5", "0.999999", "1.0000001", "9007199254740993", "12345678"]


def _clean_line(rng: random.Random) -> str:
    """A well-formed sample line with a random (possibly absurd) value: exercises what is accepted."""
    name = rng.choice(NAMES)
    labels = {"model_name": rng.choice(["m", "m", "other"]), "engine": str(rng.randint(0, 3))}
    if name.endswith("_bucket"):
        labels["le"] = rng.choice(["0.5", "1.0", "2.5", "+Inf"])
    lab = "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
    return f"{name}{lab} {rng.choice(VALID_NUMBERS)}"


def _line(rng: random.Random) -> str:
    name = rng.choice(NAMES)
    kind = rng.random()
    if kind < 0.25:
        return name + _pathological_labels(rng) + " " + rng.choice(NUMBERS)
    if kind < 0.35:
        return name + "{" + '"' * rng.randint(1, 5000) + "} 1"  # quote runs
    if kind < 0.45:
        return name + '{model_name="' + "\\" * rng.randint(1, 20000) + '"} 1'  # backslash runs
    if kind < 0.5:
        return name + "{" + "a" * rng.randint(1, 40000) + "} 1"  # over the line cap or close to it
    if kind < 0.55:
        return "".join(chr(rng.randint(0, 0x2FF)) for _ in range(rng.randint(0, 120)))
    labels = {"model_name": rng.choice(["m", "m", "other", ""])}
    if name.endswith("_bucket"):
        labels["le"] = rng.choice(["0.5", "1.0", "+Inf", "x", "NaN", "-1", "1e400"])
    if rng.random() < 0.3:
        labels[rng.choice(["engine", "__x", "a b", "le", "model_name"])] = _label_value(rng)
    ws = rng.choice(WS)
    lab = "{" + ("," + ws).join(f'{k}{ws}={ws}"{v}"' for k, v in labels.items()) + rng.choice(["", ","]) + "}"
    ts = rng.choice(["", " 1700000000000", " -1", " x", " 1 2"])
    return f"{name}{rng.choice(['', ' '])}{lab}{rng.choice(WS)}{rng.choice(NUMBERS)}{ts}"


def scrape_page(rng: random.Random) -> str:
    make = _clean_line if rng.random() < 0.4 else _line
    lines = [make(rng) for _ in range(rng.randint(1, 40))]
    if rng.random() < 0.3:
        lines.insert(0, "# TYPE vllm:num_requests_waiting gauge")
    return rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["\n", ""])


def _deep(rng: random.Random) -> str:
    depth = rng.choice([100, 1000, 5000, 100_000])
    o, c = rng.choice([("[", "]"), ('{"a":', "}")])
    inner = o * depth + "1" + c * depth
    envelope = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})
    return envelope[:-2] + ', "x": ' + inner + "}}"


def _sample_value(rng: random.Random) -> object:
    return rng.choice(["3", "0.4", "NaN", "+Inf", "-Inf", "-2", "1e308", "1e400", "1" * 400, "x", "", 3, 10**400,
                       1e300, True, None, [], {}, ["1"], "9" * 70])


def prometheus_body(rng: random.Random) -> bytes:
    """One answer to an instant query: well-formed, hostile or broken."""
    kind = rng.random()
    if kind < 0.1:
        return _deep(rng).encode()
    if kind < 0.15:
        return rng.choice([b"", b"not json", b"{", b"[]", b"null", b'"success"', b"1e999999", b"[" * 50000,
                           b'{"status": "success", "data": ' + b"9" * 5000 + b"}",
                           bytes(rng.randrange(256) for _ in range(64))])
    rows: list[object] = []
    for _ in range(rng.randint(0, 6)):
        metric: object = {"namespace": "default", "model_name": rng.choice(["m", "n", "other"])}
        if rng.random() < 0.3:
            metric = rng.choice([None, [], "m", {"model_name": 1}, {"le": rng.choice(["0.5", "+Inf", "x", None])}])
        elif rng.random() < 0.5:
            assert isinstance(metric, dict)
            metric["le"] = rng.choice(["0.5", "1.0", "+Inf", "x", "1e400"])
        t: object = rng.choice([1_700_000_000.0, 1_700_000_000, "1700000000", "NaN", 1e400, 10**400, -1, None, True])
        value: object = [t, _sample_value(rng)]
        if rng.random() < 0.1:
            value = rng.choice([None, [], [t], [t, "1", "2"], "1", {"t": 1}])
        rows.append({"metric": metric, "value": value} if rng.random() > 0.05 else rng.choice([None, [], "row"]))
    data: object = {"resultType": rng.choice(["vector"] * 8 + ["matrix", "scalar", "string", None, 1]), "result": rows}
    if rng.random() < 0.1:
        data = rng.choice([None, [], "data", {"resultType": "vector", "result": {}},
                           {"resultType": "scalar", "result": [1, "2"]}])
    doc: object = {"status": rng.choice(["success"] * 9 + ["error", None, 1]), "data": data}
    if rng.random() < 0.05:
        doc = {"status": "error", "errorType": rng.choice(["bad_data", 1, None, []]),
               "error": rng.choice(["x" * 10_000, {}, None])}
    text = json.dumps(doc, allow_nan=True)
    if rng.random() < 0.1:  # JSON literals json.dumps cannot write
        text = text.replace('"3"', rng.choice(["1" * 400, "1e400", "-1e400", "NaN", "Infinity", "9" * 5000]), 1)
    return text.encode()


@dataclass
class FuzzReport:
    cases: int = 0
    uncaught: list[str] = field(default_factory=list)  # "case i: ExceptionType: message"
    implausible: list[str] = field(default_factory=list)  # values outside bounds that reached Signals
    slow: list[tuple[int, float]] = field(default_factory=list)  # (case, seconds) over the limit
    max_seconds: float = 0.0
    rejected: int = 0  # cases refused with the documented error (ExpositionError) or counted

    def note_time(self, i: int, seconds: float, limit: float) -> None:
        self.max_seconds = max(self.max_seconds, seconds)
        if seconds > limit:
            self.slow.append((i, seconds))


def fuzz_scrape_pages(n: int, seed: int, limit_seconds: float = 1.0) -> FuzzReport:
    rng = random.Random(seed)
    rep = FuzzReport()
    for i in range(n):
        page = scrape_page(rng)
        t0 = time.perf_counter()
        try:
            m = read_pod_metrics(page, VLLM, "m", deadline=time.monotonic() + 5)
        except ExpositionError:
            rep.rejected += 1
        except Exception as e:  # anything else is a finding
            rep.uncaught.append(f"case {i}: {type(e).__name__}: {str(e)[:120]}")
        else:
            for sig, (total, count) in m.gauges.items():
                if not (count >= 1 and plausible(sig, total / count if sig is SignalName.KV_CACHE_USAGE else total)):
                    rep.implausible.append(f"case {i}: {sig.value}={total}/{count}")
            for series in m.counters.values():
                if not all(plausible_count(v) for v in series.values()):
                    rep.implausible.append(f"case {i}: counter {series}")
            for buckets in m.buckets.values():
                if not all(plausible_count(c) and le == le for le, c in buckets.values()):
                    rep.implausible.append(f"case {i}: buckets {buckets}")
        rep.note_time(i, time.perf_counter() - t0, limit_seconds)
        rep.cases += 1
    return rep


def _check_signals(i: int, sig: Signals, rep: FuzzReport) -> None:
    for s in SignalName:
        m = getattr(sig, s.value)
        if m.value is not None and not plausible(s, m.value):
            rep.implausible.append(f"case {i}: {s.value}={m.value}")
        if m.value is not None and not (m.age_seconds >= 0):  # NaN or negative age
            rep.implausible.append(f"case {i}: {s.value} age {m.age_seconds}")


def fuzz_prometheus_bodies(n: int, seed: int, limit_seconds: float = 1.0) -> FuzzReport:
    """Each case: one body answers the queries of one group (selector team=a) while the other group's
    queries get a good answer; the good group must keep its values, and collect() must not raise."""
    rng = random.Random(seed)
    rep = FuzzReport()
    good = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"namespace": "default", "model_name": "g"}, "value": [1_700_000_000.0, "2"]}]}}).encode()
    policies = [msp("m", selector={"team": "a"}), msp("n", selector={"team": "a"}), msp("g", selector={"team": "b"})]
    current = [b""]

    def handler(request: httpx.Request) -> httpx.Response:
        form = dict(httpx.QueryParams(request.content.decode()))
        chosen = current[0] if 'team="a"' in form.get("query", "") else good
        return httpx.Response(200, content=chosen, headers={"content-type": "application/json"})

    tel, _ = fresh_telemetry()
    src = PrometheusMetricsSource("http://prom:9090", telemetry=tel, max_parallel_queries=1,
                                  api_factory=_api(httpx.MockTransport(handler)))
    quiet = logging.getLogger("autoscaler.sources")
    level, quiet.level = quiet.level, logging.ERROR  # one warning per failure episode is the sources' job
    try:
        for i in range(n):
            current[0] = prometheus_body(rng)
            t0 = time.perf_counter()
            try:
                out = src.collect(policies, 1_700_000_000.0 + i)
            except Exception as e:  # collect must never raise for the batch
                rep.uncaught.append(f"case {i}: {type(e).__name__}: {str(e)[:120]}")
            else:
                for sig in out.values():
                    _check_signals(i, sig, rep)
                if out["default/g"].running.value != 2:
                    rep.uncaught.append(f"case {i}: the healthy group lost its value ({out['default/g'].running})")
                if "default/m" in src.failed_policies:
                    rep.rejected += 1
            rep.note_time(i, time.perf_counter() - t0, limit_seconds)
            rep.cases += 1
    finally:
        quiet.level = level
    return rep


def _api(transport: httpx.MockTransport) -> Callable[[str], PrometheusAPI]:
    return lambda u: PrometheusAPI(u, client=httpx.Client(transport=transport))
