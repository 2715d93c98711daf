"""Metric-source speed: one tick for 1,000 models from a real Prometheus, and 1,000 pods scraped directly.

    python benchmarks/bench_sources.py [--models 1000] [--pods 1000] [--concurrency 64]

Prometheus: 1,000 vLLM models (one replica each, every signal's series, vLLM's buckets) written as an
OpenMetrics block with `promtool tsdb create-blocks-from openmetrics`, served by Debian's prometheus;
the source queries them at the block's last timestamp. Scrape: 1,000 `/replica/<id>/metrics` paths on one
static asyncio server in its own process, each answering one real emulator replica's vLLM exposition
(the emulator itself renders ~1 ms per replica in Python, so it, not the client, would be measured). Needs
`bash .ci/install-prometheus.sh`.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoscaler.backtest.openmetrics import REQUEST_LATENCY_BUCKETS
from autoscaler.cli.params import arg_count
from autoscaler.sources.prometheus import PrometheusMetricsSource
from autoscaler.sources.scrape import ScrapeMetricsSource
from autoscaler.sources.telemetry import telemetry_for
from tests.integration.prometheus.conftest import PrometheusProcess
from tests.unit.sources.helpers import msp

TTFT = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
        80.0, 160.0, 640.0, 2560.0)


def write_models_block(path: Path, models: int, end: float, points: int = 20, step: float = 15.0) -> int:
    """OpenMetrics for `models` models, `points` samples each, ending at `end`."""
    rng = np.random.default_rng(0)
    times = end - step * np.arange(points)[::-1]
    lines = 0
    with path.open("w") as f:
        def family(name: str, kind: str, series: list[tuple[str, str, np.ndarray]]) -> None:
            nonlocal lines
            f.write(f"# TYPE {name} {kind}\n")
            for sample_name, labels, values in series:
                f.write("".join(f"{sample_name}{{{labels}}} {v:.6g} {t:.3f}\n" for v, t in zip(values, times,
                                                                                                strict=True)))
                lines += len(values)

        lab = [f'engine="0",instance="pod-{m}",model_name="model-{m}",namespace="bench"' for m in range(models)]
        rates = rng.uniform(100, 5000, models)
        for g in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"):
            family(g, "gauge", [(g, lab[m], rng.uniform(0, 1, points) * (1 if "kv" in g else 20))
                                for m in range(models)])
        for c, scale in (("vllm:prompt_tokens", 1.0), ("vllm:generation_tokens", 0.2), ("vllm:request_success", 1e-3)):
            family(c, "counter", [(c + "_total", lab[m], np.cumsum(np.full(points, rates[m] * scale * step)))
                                  for m in range(models)])
        for h, bounds in (("vllm:request_queue_time_seconds", REQUEST_LATENCY_BUCKETS),
                          ("vllm:time_to_first_token_seconds", TTFT)):
            series = []
            for m in range(models):
                per_step = rng.dirichlet(np.ones(len(bounds) + 1)) * rates[m] * 1e-3 * step
                cum_t = np.cumsum(np.outer(np.ones(points), per_step), axis=0)  # [point, bucket]
                cum_b = np.cumsum(cum_t, axis=1)
                for j, le in enumerate([*[repr(float(b)) for b in bounds], "+Inf"]):
                    series.append((h + "_bucket", f'{lab[m]},le="{le}"', cum_b[:, j]))
                series.append((h + "_count", lab[m], cum_b[:, -1]))
                series.append((h + "_sum", lab[m], cum_b[:, -1] * 0.5))
            family(h, "histogram", series)
        f.write("# EOF\n")
    return lines


def bench_prometheus(models: int, work: Path) -> dict[str, float]:
    end = float(int(time.time()) - 7200)
    om = work / "models.om"
    t = time.perf_counter()
    n = write_models_block(om, models, end)
    gen_s = time.perf_counter() - t
    prom = PrometheusProcess("global:\n  scrape_interval: 15s\nscrape_configs: []\n", work, retention="100y")
    t = time.perf_counter()
    subprocess.run([shutil.which("promtool") or "promtool", "tsdb", "create-blocks-from", "openmetrics", str(om),
                    str(prom.storage)], check=True, capture_output=True)
    load_s = time.perf_counter() - t
    om.unlink()
    prom.start(timeout=60)
    try:
        policies = [msp(f"p{m}", model=f"model-{m}", namespace="bench") for m in range(models)]
        from prometheus_client import CollectorRegistry

        src = PrometheusMetricsSource(prom.url, telemetry=telemetry_for(CollectorRegistry()), timeout_seconds=30)
        walls = []
        for _ in range(4):
            t = time.perf_counter()
            out = src.collect(policies, end)
            walls.append(time.perf_counter() - t)
        complete = sum(1 for s in out.values() if all(
            getattr(s, f).value is not None for f in ("request_rate", "prompt_tokens_rate", "waiting",
                                                      "queue_time_p90_seconds", "ttft_p90_seconds"))
            and s.queue_time_histogram is not None and s.ttft_histogram is not None)
        return {"models": models, "samples": n, "generate_s": gen_s, "promtool_s": load_s,
                "first_tick_s": walls[0], "tick_s": float(np.median(walls[1:])), "queries": src.last_query_count,
                "models_with_all_signals": complete}
    finally:
        prom.stop()


def _serve_static(body: bytes, port_out: Any) -> None:
    """A minimal asyncio HTTP/1.1 server answering every GET with `body` (keep-alive), in its own process."""
    import asyncio

    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                req = await reader.readuntil(b"\r\n\r\n")
                if not req:
                    break
                writer.write(head + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def run() -> None:
        srv = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
        port_out.put(srv.sockets[0].getsockname()[1])
        async with srv:
            await srv.serve_forever()

    asyncio.run(run())


def bench_scrape(pods: int, concurrency: int) -> dict[str, float]:
    """The scrape client against 1,000 endpoints of one static server process (a real emulator replica's
    exposition, rendered once), so the client's cost is measured, not the emulator's rendering."""
    import multiprocessing as mp

    from autoscaler.emulator import fixed_replicas
    from autoscaler.emulator.build import build_emulator
    from simulations.trace import Trace

    rng = np.random.default_rng(1)
    trace = Trace("bench", np.sort(rng.uniform(0, 60, 2000)), rng.integers(100, 1000, 2000),
                  rng.integers(10, 200, 2000), 0.0)
    em = build_emulator(trace, fixed_replicas(1), model="m", speed=1000.0)
    time.sleep(0.03)  # 30 s of simulated load
    body = em.metrics_for(0, em.driver.step()) or b""
    em.stop()
    q: Any = mp.Queue()
    proc = mp.Process(target=_serve_static, args=(body, q), daemon=True)
    proc.start()
    try:
        port = q.get(timeout=10)
        urls = [f"http://127.0.0.1:{port}/replica/{i}/metrics" for i in range(pods)]
        from prometheus_client import CollectorRegistry

        src = ScrapeMetricsSource(lambda p: urls, concurrency=concurrency, deadline_seconds=30,
                                  telemetry=telemetry_for(CollectorRegistry()))
        p = msp("m")
        walls = []
        for i in range(3):
            t = time.perf_counter()
            s = src.collect([p], 1000.0 + 15 * i)[p.key]
            walls.append(time.perf_counter() - t)
        return {"pods": len(urls), "concurrency": concurrency, "first_tick_s": walls[0],
                "tick_s": float(np.median(walls[1:])), "requests": src.last_request_count,
                "failed": len(src.failed_policies), "waiting_sum": s.waiting.value or 0.0,
                "body_bytes": len(body)}
    finally:
        proc.terminate()
        proc.join(5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=arg_count(1, 100_000), default=1000)
    ap.add_argument("--pods", type=arg_count(1, 100_000), default=1000)
    ap.add_argument("--concurrency", type=arg_count(1, 10_000), nargs="+", default=[16, 32, 64, 256])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        pr = bench_prometheus(args.models, Path(d))
    rows = [("Prometheus: 1 tick, all models", f"{pr['models']} models", f"{pr['tick_s'] * 1000:.0f} ms",
             f"{pr['queries']} queries; first tick {pr['first_tick_s'] * 1000:.0f} ms; "
             f"{pr['models_with_all_signals']} models with every signal and both latency histograms")]
    for c in args.concurrency:
        sc = bench_scrape(args.pods, c)
        rows.append((f"Scrape: 1 tick, concurrency {c}", f"{sc['pods']} pods", f"{sc['tick_s'] * 1000:.0f} ms",
                     f"{sc['requests']} GETs of {sc['body_bytes']:,} B; "
                     f"first tick {sc['first_tick_s'] * 1000:.0f} ms; failed policies {sc['failed']}"))
    w = [max(len(r[i]) for r in [*rows, ("what", "size", "wall", "notes")]) for i in range(4)]
    print(f"{'what':<{w[0]}}  {'size':<{w[1]}}  {'wall':>{w[2]}}  notes")
    for r in rows:
        print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:>{w[2]}}  {r[3]}")
    print(f"(setup: {pr['samples']:,} samples generated in {pr['generate_s']:.1f}s, promtool {pr['promtool_s']:.1f}s)")


if __name__ == "__main__":
    main()
