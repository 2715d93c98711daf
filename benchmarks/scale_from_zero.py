"""Scale from zero on real intermittent traffic: ServeGen clients served each by a model of its own.

A model only one client uses idles for hours between that client's sessions. The clients are picked by a
rule, not by hand: every client of the bundled ServeGen m-large and m-mid files whose first days have
between 30% and 90% of their 10-minute windows idle (collection gaps every client shares excluded), a mean
rate of at least 1 request/s when active, and idle runs of an hour or more at the median. Each is replayed
(fluid fleet, `typical` cold start, its real rate) with:

- `ours`: the default policy as shipped (`replicas.min` 1, a business-hours floor of 2);
- `ours min 1`: the same without the floor window;
- `ours zero`: the same with `replicas.min: 0` and `scaleFromZero` (idleSeconds 900; the gateway's count is
  the simulated gateway's outstanding requests, `simulations.metrics_view`);
- `keda zero` / `keda min 1`: KEDA's Prometheus trigger on the queue-time p90 (the signal the bench validates
  KEDA on for fluid fleets), `minReplicaCount` 0 (cooldownPeriod 900 s, with the production-stack chart's
  keepalive trigger: `simulations.autoscalers.keda`) or 1, its threshold searched per client by the
  bench's bisection (`simulations.search.search`) to the cheapest setting that reaches the attainment
  `ours zero` reached there: the cost of the same service, as in the headline.

    python benchmarks/scale_from_zero.py [--days 2] [--workers 2] [--json OUT.json]
    python benchmarks/scale_from_zero.py --gap      # the two synthetic gaps of the unit tests, in a minute

`--gap` replays, request by request, 20 minutes at 2 requests/s, an hour of nothing, then 20 minutes at 2
(or 30) requests/s: the wake into light and into heavy traffic.

Prints one row per client and the totals: GPU-hours, attainment of the 2-s TTFT SLO over every request
(those that arrive while a model rests wait out a cold start, and miss), the share of the time at 0
replicas, and the largest fleet (KEDA: its threshold; ✗ where no threshold reached the target). About 20
minutes on 2 cores for 2 days; progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: its sibling modules

from autoscaler.cli.params import WORKERS, arg_number
from autoscaler.policy import PolicySpec, revised
from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.keda import Keda
from simulations.autoscalers.ours import Ours
from simulations.runner import RunResult, run
from simulations.scenario import Scenario, TraceSpec, build_workload, bundled_path, resolve_trace_path
from simulations.search import Point, main_knob, search
from simulations.trace import BinnedWorkload, Trace
from simulations.trace_loaders import load_servegen_windows

MODELS = ("m-large", "m-mid")
POLICIES = ("ours", "ours min 1", "ours zero", "keda zero", "keda min 1")
KEDA = {"keda zero": 0, "keda min 1": 1}  # minReplicaCount
IDLE_SECONDS = 900.0  # scaleFromZero.idleSeconds, and KEDA's cooldownPeriod to match
WINDOW = 600.0


def intermittent_clients(days: float) -> list[tuple[str, int]]:
    """(model, client) of every client the module docstring's rule picks, over its first `days`."""
    out = []
    for model in MODELS:
        _, clients = load_servegen_windows(resolve_trace_path(f"servegen/{model}"))
        rates = np.stack([c[:, 0] for _, c in clients])
        shared_gap = np.all(rates == 0, axis=0)
        n = int(days * 86400 / WINDOW)
        for (name, _), r in zip(clients, rates, strict=True):
            r = r[~shared_gap][:n]
            idle = r == 0
            if not 0.3 <= idle.mean() <= 0.9 or r[~idle].mean() < 1.0:
                continue
            runs, run_len = [], 0
            for x in idle:
                if x:
                    run_len += 1
                elif run_len:
                    runs.append(run_len)
                    run_len = 0
            if run_len:
                runs.append(run_len)
            if np.median(runs) * WINDOW >= 3600:
                out.append((model, int(name.split()[-1])))
    return out


def ours(label: str, spec: PolicySpec) -> Ours:
    no_window: dict[str, Any] = {"floor_schedule": []}
    if label == "ours":
        return Ours(spec)
    if label == "ours min 1":
        return Ours(revised(spec, replicas=no_window))
    return Ours(revised(spec, replicas={"min": 0, **no_window},
                        scale_from_zero={"query": "sum(gateway_in_flight)", "idle_seconds": IDLE_SECONDS}))


def _record(res: RunResult, **extra: Any) -> dict[str, Any]:
    return {"gpu_hours": res.outcome.gpu_hours, "attainment": res.outcome.attainment,
            "at_zero": float(np.mean(res.series_desired == 0)), "max": int(res.series_desired.max()), **extra}


def keda(sc: Scenario, wl: BinnedWorkload | Trace, minimum: int, target: float) -> dict[str, Any]:
    """KEDA's cheapest queue-time threshold reaching `target`, by the bench's search."""
    runs: dict[float, RunResult] = {}

    def evaluate(v: float) -> Point:
        runs[v] = run(sc, wl, Keda(v, signal="queue_p90", min_replicas=minimum, cooldown_seconds=IDLE_SECONDS))
        return Point(v, runs[v].outcome.attainment, runs[v].outcome.gpu_hours)

    found = search(evaluate, main_knob("keda", (("signal", "queue_p90"),)), target)
    best = found.best
    return _record(runs[best.value], threshold=best.value, reached=found.reached)


def replay(model: str, client: int, days: float) -> dict[str, Any]:
    spec = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    sc = Scenario(name=f"{model}-client-{client}", fidelity="fluid", bin_seconds=1, cold_start="typical",
                  initial_replicas=1, trace=TraceSpec(format="servegen", path=f"servegen/{model}", client=client,
                                                      limit_seconds=days * 86400))
    wl = build_workload(sc)
    assert isinstance(wl, BinnedWorkload)
    row: dict[str, Any] = {"scenario": sc.name, "requests": float(np.sum(wl.counts))}
    for label in POLICIES[:3]:
        row[label] = _record(run(sc, wl, ours(label, spec)))
    for label, minimum in KEDA.items():
        row[label] = keda(sc, wl, minimum, row["ours zero"]["attainment"])
    print(f"  {sc.name} done", file=sys.stderr, flush=True)
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = "| traffic | requests | " + " | ".join(POLICIES) + " |"
    lines = [head, "|" + "---|" * (2 + len(POLICIES))]

    def cell(r: dict[str, Any]) -> str:
        zero = f", {r['at_zero']:.0%} at 0" if r["at_zero"] > 0 else ""
        knob = f", threshold {r['threshold']:.3g} s" if "threshold" in r else ""
        miss = "✗ " if r.get("reached") is False else ""
        return f"{miss}{r['gpu_hours']:.1f} GPU-h, {r['attainment']:.2%}{zero}, max {r['max']}{knob}"

    for row in rows:
        lines.append(f"| {row['scenario']} | {row['requests']:.0f} | " + " | ".join(cell(row[p]) for p in POLICIES)
                     + " |")
    total = sum(r["requests"] for r in rows)
    sums = []
    for p in POLICIES:
        gpu = sum(r[p]["gpu_hours"] for r in rows)
        att = sum(r[p]["attainment"] * r["requests"] for r in rows) / total if total else 0.0
        sums.append(f"**{gpu:.1f} GPU-h, {att:.2%}**")
    lines.append(f"| all {len(rows)} | {total:.0f} | " + " | ".join(sums) + " |")
    return "\n".join(lines)


def gap_trace(rate_after: float) -> Trace:
    """20 minutes at 2 requests/s, an hour of nothing, 20 minutes at `rate_after` (1,000-token prompts
    ±50%, 200-token outputs ±50%; seeded)."""
    parts, t0 = [], 0.0
    for seed, (rate, seconds) in enumerate(((2.0, 1200.0), (0.0, 3600.0), (rate_after, 1200.0))):
        rng = np.random.default_rng(seed + 1)
        n = rng.poisson(rate * seconds)
        parts.append((t0 + np.sort(rng.uniform(0, seconds, n)), rng.integers(500, 1501, n), rng.integers(100, 301, n)))
        t0 += seconds
    arrivals, prompts, outputs = (np.concatenate(x) for x in zip(*parts, strict=True))
    return Trace(f"gap-then-{rate_after:g}rps", arrivals, prompts, outputs, 1704067200.0)


def gap_rows() -> list[dict[str, Any]]:
    spec = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    rows = []
    for rate in (2.0, 30.0):
        trace = gap_trace(rate)
        sc = Scenario(name=trace.name, trace=TraceSpec(format="flash-crowd"), initial_replicas=1,
                      cold_start="typical")
        row: dict[str, Any] = {"scenario": sc.name, "requests": float(len(trace.arrival_s))}
        for label in POLICIES[:3]:
            row[label] = _record(run(sc, trace, ours(label, spec)))
        for label, minimum in KEDA.items():
            row[label] = keda(sc, trace, minimum, row["ours zero"]["attainment"])
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=arg_number(0.1, 14), default=2.0, help="each client's first N days")
    ap.add_argument("--workers", type=WORKERS, default=2)
    ap.add_argument("--json", type=Path, help="write the rows here too")
    ap.add_argument("--gap", action="store_true", help="the synthetic gaps instead of the ServeGen clients")
    args = ap.parse_args()
    if args.gap:
        print(table(gap_rows()))
        return
    picked = intermittent_clients(args.days)
    print(f"{len(picked)} clients, {len(POLICIES)} policies each, {args.days:g} days", file=sys.stderr, flush=True)
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(replay, *zip(*picked, strict=True), [args.days] * len(picked)))
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
