"""Fuzzing the metric sources with seeded hostile input: scrape pages and Prometheus API bodies.

    python benchmarks/fuzz_sources.py [--cases 10000] [--seed 1] [--limit 1.0]

Scrape pages: random vLLM-like lines, with pathological label runs (the `{a=""    a=""    ...!}` shape
that once made the parser backtrack exponentially), quote and backslash runs, lines over the length cap,
huge, NaN and malformed numbers, reserved and duplicate labels, random characters. Each page goes through
`read_pod_metrics`. Prometheus bodies: well-formed answers with hostile values (400- and 5000-digit
numbers as JSON literals and strings, NaN, ±Inf, 1e400), JSON nested up to 100,000 deep, wrong types at
every level, truncated and non-JSON bodies. Each body answers one query group's queries while another
group gets good answers, through `PrometheusMetricsSource.collect`.

Pass: 0 uncaught exceptions (anything but the documented ExpositionError, or collect() raising), 0 values
outside the signals' physical bounds reaching the output, the healthy group keeping its value, 0 cases
over `--limit` seconds. Exit status 1 otherwise. The cases are those of the unit test
(tests/unit/sources/test_fuzz_sources.py), which runs a few hundred of them.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoscaler.cli.params import arg_count, arg_number
from autoscaler.sources.engines import engine_metrics
from autoscaler.sources.exposition import ExpositionError, read_pod_metrics
from tests.unit.sources.fuzzcases import FuzzReport, fuzz_prometheus_bodies, fuzz_scrape_pages

REDOS_LINE = 'vllm:num_requests_waiting{' + ('a=""' + "    ") * 12 + "!} 1"


def redos_line_ms(repeats: int = 1000) -> float:
    """Mean milliseconds to read the 126-byte line that took ~100 s with the old regex parser."""
    vllm = engine_metrics("vllm")
    t0 = time.perf_counter()
    for _ in range(repeats):
        with contextlib.suppress(ExpositionError):
            read_pod_metrics(REDOS_LINE + "\n", vllm, "m")
    return (time.perf_counter() - t0) / repeats * 1e3


def show(name: str, r: FuzzReport, seconds: float) -> bool:
    ok = not (r.uncaught or r.implausible or r.slow)
    print(f"{name}: {r.cases} cases in {seconds:.1f} s, {len(r.uncaught)} uncaught, {len(r.implausible)} implausible "
          f"values out, {len(r.slow)} over the limit (slowest {r.max_seconds * 1e3:.1f} ms), {r.rejected} refused "
          f"as invalid -> {'PASS' if ok else 'FAIL'}")
    for line in (r.uncaught + r.implausible)[:10]:
        print("   ", line)
    for i, seconds in r.slow[:10]:
        print(f"    case {i}: {seconds * 1e3:.0f} ms")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=arg_count(1, 100_000_000), default=10_000)
    ap.add_argument("--seed", type=arg_count(0, 2**32 - 1), default=1)
    ap.add_argument("--limit", type=arg_number(0, 3600, lo_open=True), default=1.0, help="seconds one case may take")
    a = ap.parse_args()
    print(f"ReDoS line ({len(REDOS_LINE)} bytes): {redos_line_ms():.3f} ms per read")
    t0 = time.perf_counter()
    scrape = fuzz_scrape_pages(a.cases, a.seed, a.limit)
    ok = show("scrape pages", scrape, time.perf_counter() - t0)
    t0 = time.perf_counter()
    prom = fuzz_prometheus_bodies(a.cases, a.seed, a.limit)
    ok = show("prometheus bodies", prom, time.perf_counter() - t0) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
