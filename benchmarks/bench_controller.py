"""Cost of one controller tick over many policies, against a fake API server in another process.

Run: python benchmarks/bench_controller.py [--policies 1000] [--pods-per-target 2] [--steady-ticks 20]
The fake API server (tests/unit/controller/fakeapi.py, real HTTP) runs in a child process so the
numbers below are the controller's own. Two metric sources:
- `prometheus`: the real PrometheusMetricsSource with its HTTP layer stubbed to count PromQL queries
  (answers are empty, so every policy holds on missing metrics: reads + decide + status, no writes);
- `load`: a fixed load that makes every policy scale up (reads + decide + scale write + status + event).
Per source: the first tick (every policy new), `--settle-ticks` unmeasured ticks, the steady state
(`--steady-ticks` ticks 15 s apart, load unchanged: API calls per policy per tick averaged over them,
wall/CPU the worst tick), and for `load` a burst tick after every policy's load went up 4x (every
policy must write its new scale in that tick).
A policy still in flight when a tick's phase budget ends finishes on its own (column `late`); the
bench waits for it and counts its time in that tick's wall/CPU and its calls in that tick's calls.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import client
from kubernetes.client import rest
from rich.console import Console
from rich.table import Table

from autoscaler.cli.params import arg_count, arg_number
from autoscaler.controller.manager import Controller, ControllerConfig
from autoscaler.policy import DAY
from autoscaler.sources.prom_api import PrometheusAPI, Sample
from autoscaler.sources.prometheus import PrometheusMetricsSource
from tests.unit.controller.conftest import CountingSource, pod, policy
from tests.unit.controller.fakeapi import FakeKube

GROUP = "autoscaler.inference.dev"


def serve(n: int, pods_per_target: int, q: Any) -> None:
    kube = FakeKube()
    for i in range(n):
        ns, name = f"ns-{i % 50}", f"model-{i}"
        labels = {"app": name}
        kube.put("apps", "deployments", {"metadata": {"name": name, "namespace": ns},
                                         "spec": {"replicas": pods_per_target, "selector": {"matchLabels": labels}},
                                         "status": {"replicas": pods_per_target}}, kind="Deployment")
        for j in range(pods_per_target):
            kube.put("", "pods", pod(f"{name}-{j}", ns, labels, node=f"gpu-{i % 100}"), kind="Pod")
        kube.put(GROUP, "modelscalingpolicies", policy(name, ns, target=name), kind="ModelScalingPolicy")
    for k in range(100):
        kube.put("", "nodes", {"metadata": {"name": f"gpu-{k}", "creationTimestamp": "2025-01-01T00:00:00Z"},
                               "status": {"allocatable": {"nvidia.com/gpu": "8"},
                                          "conditions": [{"type": "Ready", "status": "True"}]}}, kind="Node")
    q.put(kube.start())
    while True:
        time.sleep(3600)


class StubPrometheus(PrometheusAPI):
    """A Prometheus that answers every instant query with no samples, counting the queries (no network)."""

    def __init__(self) -> None:
        super().__init__("http://prometheus.invalid")
        self.queries = 0

    def query(self, promql: str, time: float) -> list[Sample]:
        self.queries += 1
        return []

    def for_url(self, url: str) -> PrometheusAPI:
        """An `api_factory`: this stub stands for every Prometheus URL."""
        return self


def count_calls() -> Counter[str]:
    calls: Counter[str] = Counter()
    original = rest.RESTClientObject.request

    def counting(self: Any, method: str, url: str, *a: Any, **kw: Any) -> Any:
        calls[method] += 1
        return original(self, method, url, *a, **kw)

    rest.RESTClientObject.request = counting
    return calls


def timed_tick(c: Controller, now: float, calls: Counter[str]) -> dict[str, Any]:
    """One tick; policies left in flight past the phase budget are waited for (and their time and calls
    counted: `wall` is until the last policy of the tick is done, `late` how many finished after the tick)."""
    calls.clear()
    cpu0, t0 = time.process_time(), time.perf_counter()
    report = c.reconciler.tick(now)
    late = [rt.inflight for rt in c.reconciler.runtimes.values() if rt.inflight is not None]
    for fut in late:
        fut.result()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"report": report, "wall": wall, "cpu": cpu, "calls": dict(calls), "late": len(late)}


def one_run(url: str, label: str, source: Any, queries: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """A first tick (everything new: every status written), `--steady-ticks` ticks at 15 s steps with the
    load unchanged, then (load source) a burst tick after every policy's load has changed."""
    cfg = client.Configuration()
    cfg.host = url
    cfg.connection_pool_maxsize = 8
    config = ControllerConfig(identity="bench", state_max_age_seconds=args.state_max_age)
    c = Controller(client.ApiClient(cfg), source, config)
    t = time.perf_counter()
    c.sync()
    sync_s = time.perf_counter() - t
    stop = threading.Event()
    c.start_watches(stop)  # the caches follow the API server as in a running controller
    calls = count_calls()
    now = time.time()
    rows = []
    q0 = queries()
    first = timed_tick(c, now, calls)
    rows.append({"phase": "first tick", "ticks": 1, **first, "queries": queries() - q0, "sync": sync_s})
    for k in range(1, args.settle_ticks + 1):  # not measured: the tick after the first one records the
        time.sleep(0.2)  # replica counts that tick set (a status write per policy), then rate limits settle
        timed_tick(c, now + 15 * k, calls)
    now += 15 * args.settle_ticks
    steady = []
    q0 = queries()
    for k in range(1, args.steady_ticks + 1):
        time.sleep(0.2)  # let the watches deliver the previous tick's writes, as 15 s would
        steady.append(timed_tick(c, now + 15 * k, calls))
    if steady:
        total: Counter[str] = Counter()
        for s in steady:
            total.update(s["calls"])
        rows.append({
            "phase": f"steady ({len(steady)} ticks)", "ticks": len(steady), "report": steady[-1]["report"],
            "wall": max(s["wall"] for s in steady), "cpu": max(s["cpu"] for s in steady),
            "cpu_mean": sum(s["cpu"] for s in steady) / len(steady), "calls": dict(total),
            "writes": sum(s["report"].writes for s in steady), "queries": queries() - q0,
            "late": sum(s["late"] for s in steady),
        })
    if hasattr(source, "prompt_tps"):
        source.prompt_tps *= 4
        source.gen_tps *= 4
        time.sleep(0.2)
        q0 = queries()
        burst = timed_tick(c, now + 15 * (args.steady_ticks + 1), calls)
        rows.append({"phase": "burst (load x4)", "ticks": 1, **burst, "queries": queries() - q0})
    stop.set()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for r in rows:
        r["source"], r["rss"] = label, rss
        r.setdefault("writes", r["report"].writes)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policies", type=arg_count(1, 100_000), default=1000)
    ap.add_argument("--pods-per-target", type=arg_count(1, 1000), default=2)
    ap.add_argument("--steady-ticks", type=arg_count(1, 10_000), default=20,
                    help="ticks at 15 s steps with unchanged load")
    ap.add_argument("--settle-ticks", type=arg_count(0, 10_000), default=3,
                    help="unmeasured ticks between the first and steady")
    ap.add_argument("--state-max-age", type=arg_number(0, DAY, lo_open=True), default=300.0,
                    help="ControllerConfig.state_max_age_seconds")
    ap.add_argument("--sources", default="prometheus,load")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for label in args.sources.split(","):
        q: Any = mp.get_context("fork").Queue()
        server = mp.get_context("fork").Process(target=serve, args=(args.policies, args.pods_per_target, q),
                                                daemon=True)
        server.start()
        url = q.get(timeout=1800)
        try:
            if label == "prometheus":
                stub = StubPrometheus()
                src: Any = PrometheusMetricsSource("http://prometheus.invalid", api_factory=stub.for_url)
                rows.extend(one_run(url, label, src, lambda s=stub: s.queries, args))
            else:
                counting = CountingSource()
                rows.extend(one_run(url, label, counting, lambda c=counting: c.queries, args))
        finally:
            server.kill()
    table = Table(title=f"Controller ticks over {args.policies} policies ({args.pods_per_target} pods each, "
                        f"100 nodes; fake API over HTTP in another process; state_max_age "
                        f"{args.state_max_age:.0f} s)")
    for col in ("source", "phase", "reconciled", "scale writes", "wall s (max)", "CPU s (max)", "CPU s (mean)",
                "API calls/policy/tick", "API calls (by verb)", "PromQL/tick", "late", "peak RSS MiB"):
        table.add_column(col, justify="right")
    for r in rows:
        verbs = ", ".join(f"{k} {v}" for k, v in sorted(r["calls"].items()))
        n = args.policies
        per = sum(r["calls"].values()) / (n * r["ticks"])
        table.add_row(r["source"], r["phase"], str(r["report"].reconciled), str(r["writes"]), f"{r['wall']:.2f}",
                      f"{r['cpu']:.2f}", f"{r.get('cpu_mean', r['cpu']):.2f}", f"{per:.4f}",
                      f"{sum(r['calls'].values())} ({verbs})", f"{r['queries'] / r['ticks']:.1f}", str(r["late"]),
                      f"{r['rss']:.0f}")
    Console(width=240).print(table)


if __name__ == "__main__":
    main()
