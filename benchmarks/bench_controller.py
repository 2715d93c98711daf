"""Cost of one controller tick over many policies, against a fake API server in another process.

Run: python benchmarks/bench_controller.py [--policies 1000] [--pods-per-target 2]
The fake API server (tests/unit/controller/fakeapi.py, real HTTP) runs in a child process so the
numbers below are the controller's own. Two metric sources:
- `prometheus`: the real PrometheusMetricsSource with its HTTP layer stubbed to count PromQL queries
  (answers are empty, so every policy holds on missing metrics: reads + decide + status, no writes);
- `load`: a fixed load that makes every policy scale up (reads + decide + scale write + status + event).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import client
from kubernetes.client import rest
from rich.console import Console
from rich.table import Table

from autoscaler.controller.manager import Controller, ControllerConfig
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


class StubPrometheus:
    def __init__(self) -> None:
        self.queries = 0

    def query(self, promql: str, now: float) -> list[Any]:
        self.queries += 1
        return []

    def close(self) -> None:
        pass


def count_calls() -> Counter[str]:
    calls: Counter[str] = Counter()
    original = rest.RESTClientObject.request

    def counting(self: Any, method: str, url: str, *a: Any, **kw: Any) -> Any:
        calls[method] += 1
        return original(self, method, url, *a, **kw)

    rest.RESTClientObject.request = counting  # type: ignore[method-assign]
    return calls


def one_run(url: str, label: str, source: Any, queries: Any) -> dict[str, Any]:
    cfg = client.Configuration()
    cfg.host = url
    cfg.connection_pool_maxsize = 8
    c = Controller(client.ApiClient(cfg), source, ControllerConfig(identity="bench"))
    t = time.perf_counter()
    c.sync()
    sync_s = time.perf_counter() - t
    calls = count_calls()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0, t0 = time.process_time(), time.perf_counter()
    report = c.reconciler.tick(time.time())
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"source": label, "policies": report.reconciled, "writes": report.writes, "wall": wall, "cpu": cpu,
            "sync": sync_s, "rss": rss1 / 1024, "rss_growth": (rss1 - rss0) / 1024, "calls": dict(calls),
            "queries": queries()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policies", type=int, default=1000)
    ap.add_argument("--pods-per-target", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for label in ("prometheus", "load"):
        q: Any = mp.get_context("fork").Queue()
        server = mp.get_context("fork").Process(target=serve, args=(args.policies, args.pods_per_target, q),
                                                daemon=True)
        server.start()
        url = q.get(timeout=300)
        try:
            if label == "prometheus":
                stub = StubPrometheus()
                src: Any = PrometheusMetricsSource("http://prometheus.invalid", api_factory=lambda u, s=stub: s)
                rows.append(one_run(url, label, src, lambda s=stub: s.queries))
            else:
                counting = CountingSource()
                rows.append(one_run(url, label, counting, lambda c=counting: f"{c.queries} (simulated)"))
        finally:
            server.kill()
    table = Table(title=f"One controller tick over {args.policies} policies "
                        f"({args.pods_per_target} pods each, 100 nodes; fake API over HTTP in another process)")
    for col in ("source", "reconciled", "scale writes", "wall s", "CPU s", "ms/policy", "peak RSS MiB",
                "API calls (by verb)", "PromQL queries", "initial list s"):
        table.add_column(col, justify="right")
    for r in rows:
        verbs = ", ".join(f"{k} {v}" for k, v in sorted(r["calls"].items()))
        table.add_row(r["source"], str(r["policies"]), str(r["writes"]), f"{r['wall']:.2f}", f"{r['cpu']:.2f}",
                      f"{1000 * r['wall'] / max(1, r['policies']):.2f}", f"{r['rss']:.0f}",
                      f"{sum(r['calls'].values())} ({verbs})", str(r["queries"]), f"{r['sync']:.2f}")
    Console(width=220).print(table)


if __name__ == "__main__":
    main()
