"""Fluid vs request-level fleet on the shared traces (`simulations.fidelity.TRACES`): what each one's scrapes
read, and what a policy family gets on each.

    python benchmarks/fluid_vs_request.py gauges azure-conv 8      # a static fleet of 8: the metric views
    python benchmarks/fluid_vs_request.py family azure-conv kpa 100 scale_down_delay=900
    python benchmarks/fluid_vs_request.py family diurnal-peak static 17
    python benchmarks/fluid_vs_request.py queue azure-conv 8      # queue-time tail vs the gated-step law
    python benchmarks/fluid_vs_request.py sweep --trace servegen-mid   # hpa/keda around the bench settings

`gauges` scrapes both fleets every 15 s (as the controller's Prometheus would) and prints, per minute,
waiting, running, the p90 queue time and p90 TTFT the metrics view derives, preemptions in the minute and
completions per second, then the share of requests per queue-time bucket. `family` replays one setting
on both and prints attainment and GPU-hours (docs/vllm-replica-model.md, "Fluid and request-level", has
the numbers these produced). `queue` compares a static fleet's queue-time tail, request-level and fluid,
with the gated-step law of `simulations.step_queue` per replica, at the mean rate and at each bin's rate.
`sweep` replays HPA and KEDA on both fleets at and around the settings the bench picked (SWEEP) and
counts the cells that agree (attainment within 2 points, GPU-hours within 15 %).
"""

from __future__ import annotations

import argparse

import numpy as np

from autoscaler.cli.params import arg_count, arg_number
from autoscaler.policy import MAX_REPLICAS
from simulations.autoscalers.registry import FAMILIES
from simulations.fidelity import TRACES, agreement_case
from simulations.fluid import FluidFleet
from simulations.histograms import REQUEST_LATENCY_BUCKETS
from simulations.metrics_view import MetricsView
from simulations.runner import SCRAPE_INTERVAL_SECONDS, make_fleet, run
from simulations.step_queue import GatedStep


def gauges(trace: str, replicas: int, minutes: int) -> None:
    sc, tr = agreement_case(trace)
    fleets = {"request": make_fleet(sc, tr, replicas), "fluid": make_fleet(sc, tr.binned(sc.bin_seconds), replicas)}
    views = {k: MetricsView() for k in fleets}
    print(f"{trace}, static {replicas}: request-level | fluid")
    print(f"{'t':>5}  {'waiting':>13}  {'running':>13}  {'queue p90 s':>13}  {'TTFT p90 s':>13}  "
          f"{'preempt/min':>13}  {'done/s':>13}")
    end = min(tr.duration_seconds, minutes * 60.0)
    last: dict[str, tuple[float, float]] = {k: (0.0, 0.0) for k in fleets}
    for t in np.arange(0.0, end, SCRAPE_INTERVAL_SECONDS):
        samples = {k: f.scrape(float(t)) for k, f in fleets.items()}
        for k, s in samples.items():
            views[k].record(s)
        if t > 0 and t % 60 == 0:
            a, b = (views[k].signals(float(t)) for k in ("request", "fluid"))
            # vllm:num_preemptions_total and vllm:request_success_total over the minute
            rates = {k: (s.preemptions - last[k][0], (s.request_success - last[k][1]) / 60.0)
                     for k, s in samples.items()}
            last = {k: (s.preemptions, s.request_success) for k, s in samples.items()}
            cells = [(a.waiting.value, b.waiting.value), (a.running.value, b.running.value),
                     (a.queue_time_p90_seconds.value, b.queue_time_p90_seconds.value),
                     (a.ttft_p90_seconds.value, b.ttft_p90_seconds.value),
                     (rates["request"][0], rates["fluid"][0]), (rates["request"][1], rates["fluid"][1])]
            print(f"{t:5.0f}  " + "  ".join(f"{_f(x):>6}|{_f(y):<6}" for x, y in cells))
    print("share of requests per queue-time bucket (upper bound, s): request-level | fluid")
    shares = {k: np.asarray(f.queue_h.counts) / max(1.0, float(sum(f.queue_h.counts))) for k, f in fleets.items()}
    for i, ub in enumerate((*REQUEST_LATENCY_BUCKETS, float("inf"))):
        if shares["request"][i] > 5e-4 or shares["fluid"][i] > 5e-4:
            print(f"  ≤ {ub:g}: {shares['request'][i]:.3f} | {shares['fluid'][i]:.3f}")


def queue(trace: str, replicas: int, minutes: int) -> None:
    sc, tr = agreement_case(trace)
    end = min(tr.duration_seconds, minutes * 60.0)
    wl = tr.binned(sc.bin_seconds)
    running = []
    shares = {}
    for name, workload in (("request-level", tr), ("fluid", wl)):
        fleet = make_fleet(sc, workload, replicas)
        for t in np.arange(SCRAPE_INTERVAL_SECONDS, end, SCRAPE_INTERVAL_SECONDS):
            s = fleet.scrape(float(t))
            if name == "request-level":
                running.append(s.running)
        c = np.asarray(fleet.queue_h.counts, dtype=float)
        shares[name] = (1.0 - np.cumsum(c / c.sum())[:2], fleet.queue_h.sum / max(1.0, fleet.queue_h.count))
    # the law per replica: the step's fixed part with the request-level fleet's mean batch beside the prefill
    fluid = make_fleet(sc, wl, replicas)
    assert isinstance(fluid, FluidFleet)
    batch = float(np.mean(running)) / replicas
    s0 = fluid._base + batch * fluid._cd
    capped = np.minimum(np.maximum(wl.prompt_sample, 1.0), fluid._budget - batch)
    moments = (fluid._cp * float(np.mean(capped)), fluid._cp ** 2 * float(np.mean(capped * capped)))
    full = s0 + (fluid._budget - batch) * fluid._cp
    counts = wl.counts[: int(end / wl.bin_seconds)]
    laws = [GatedStep(c / (replicas * wl.bin_seconds), s0, *moments, full) for c in counts]
    at_mean = GatedStep(float(counts.mean()) / (replicas * wl.bin_seconds), s0, *moments, full)
    per_bin = [sum(c * law.tail(x) for c, law in zip(counts, laws, strict=True)) / counts.sum()
               for x in REQUEST_LATENCY_BUCKETS[:2]]
    print(f"{trace}, static {replicas}, first {end / 60:g} min: share of requests waiting > 0.3 s, > 0.5 s; "
          f"mean queue time (s)")
    for name, (tail, mean) in shares.items():
        print(f"  {name:<22} {tail[0]:.3f}  {tail[1]:.3f}  {mean:.3f}")
    print(f"  law at the mean rate   {at_mean.tail(0.3):.3f}  {at_mean.tail(0.5):.3f}  {at_mean.mean:.3f}  "
          f"(ρ {at_mean.rho:.2f}, s0 {1000 * s0:.1f} ms)")
    print(f"  law at each bin's rate {per_bin[0]:.3f}  {per_bin[1]:.3f}")


def family(trace: str, name: str, value: float, settings: dict[str, float | str]) -> tuple[float, float]:
    """Print one setting on both fleets; return (attainment gap in points, fluid / request GPU-hours − 1)."""
    sc, tr = agreement_case(trace)
    fam = FAMILIES[name]
    req = run(sc, tr, fam.make(value, settings)).outcome
    flu = run(sc, tr.binned(sc.bin_seconds), fam.make(value, settings)).outcome
    gap, cost = 100 * (flu.attainment - req.attainment), flu.gpu_hours / req.gpu_hours - 1.0
    print(f"{trace} {fam.label(value, settings)}: attainment {req.attainment:.2%} request-level, "
          f"{flu.attainment:.2%} fluid (gap {gap:+.2f} points); GPU-h {req.gpu_hours:.2f} vs "
          f"{flu.gpu_hours:.2f} ({100 * cost:+.1f} %)", flush=True)
    return gap, cost


# HPA and KEDA at the settings docs/benchmarks.md's decision-quality table picked (queue p90 0.2973 s and
# 0.42 s, waiting 0.44-0.59 per pod, running 64) and their neighbours, on every shared trace
SWEEP: tuple[tuple[str, str, tuple[float, ...]], ...] = (
    ("hpa", "queue_p90", (0.21, 0.2973, 0.42, 0.6)),
    ("keda", "queue_p90", (0.21, 0.2973, 0.42, 0.6)),
    ("hpa", "waiting", (0.35, 0.5, 0.5946, 0.71)),
    ("keda", "waiting", (0.31, 0.4419, 0.5256, 0.74)),
    ("hpa", "running", (32.0, 45.0, 64.0)),
)


def sweep(traces: tuple[str, ...]) -> None:
    agree = total = 0
    for trace in traces:
        for name, signal, values in SWEEP:
            for v in values:
                gap, cost = family(trace, name, v, {"signal": signal})
                total += 1
                agree += abs(gap) <= 2.0 and abs(cost) <= 0.15
    print(f"{agree} of {total} cells agree (attainment within 2 points, GPU-hours within 15 %)")


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.3g}"


def _setting(text: str) -> tuple[str, float | str]:
    k, _, v = text.partition("=")
    try:
        return k, float(v)
    except ValueError:
        return k, v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    g = sub.add_parser("gauges")
    g.add_argument("trace", choices=TRACES)
    g.add_argument("replicas", type=arg_count(1, MAX_REPLICAS))
    g.add_argument("--minutes", type=arg_count(1, 1440), default=15)
    q = sub.add_parser("queue")
    q.add_argument("trace", choices=TRACES)
    q.add_argument("replicas", type=arg_count(1, MAX_REPLICAS))
    q.add_argument("--minutes", type=arg_count(1, 1440), default=10)
    w = sub.add_parser("sweep")
    w.add_argument("--trace", choices=TRACES, help="one shared trace (default: all)")
    f = sub.add_parser("family")
    f.add_argument("trace", choices=TRACES)
    f.add_argument("family", choices=("static", "hpa", "keda", "kpa"))
    f.add_argument("value", type=arg_number(0, 1e6))
    f.add_argument("settings", nargs="*", help="secondary knobs, e.g. signal=queue_p90 down_window=600")
    args = ap.parse_args()
    if args.what == "gauges":
        gauges(args.trace, args.replicas, args.minutes)
    elif args.what == "queue":
        queue(args.trace, args.replicas, args.minutes)
    elif args.what == "sweep":
        sweep((args.trace,) if args.trace else TRACES)
    else:
        family(args.trace, args.family, args.value, dict(_setting(s) for s in args.settings))


if __name__ == "__main__":
    main()
