"""How well does the controller count SLO misses from a latency histogram?

The decision reads TTFT as Prometheus keeps it: cumulative counts per bucket bound. A 2-s SLO falls inside
vLLM's (1.0, 2.5] s bucket. Interpolating linearly inside that bucket, as `histogram_quantile` does
(`LatencyHistogram.linear_share_within`), counts a third of every request in the bucket as a miss, whatever
its TTFT; that is what the controller counted until decision change L. It now interpolates the survival
function geometrically inside the bucket (an exponential tail there; `LatencyHistogram.share_within`).
This script replays scenarios with ours as shipped and, once per rate window (60 s, so no request is read
twice), reads the TTFT histogram the decision reads. It prints the share of requests that missed the SLO
in the replay against what the histogram says, counted three ways:

    python benchmarks/slo_count.py azure-conv azure-conv-cold servegen-mid --seconds 1800

- linear: `histogram_quantile`'s uniform density inside the bucket (the controller before change L);
- exponential: what the controller counts now;
- bounds: only the requests above the bucket's upper bound, and every request above its lower bound.

docs/benchmarks.md ("Tried in the twelfth round", "Why L") records runs.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from autoscaler.cli.params import arg_number
from autoscaler.core.signals import LatencyHistogram
from autoscaler.policy import DAY, PolicySpec
from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.base import Context
from simulations.autoscalers.ours import Ours
from simulations.bench import default_policy_file
from simulations.runner import run
from simulations.scenario import build_workload, load_scenario

RATE_WINDOW_SECONDS = 60.0


def bucket_bounds(h: LatencyHistogram, seconds: float) -> tuple[float, float]:
    """(requests above the upper bound, requests above the lower bound) of the bucket holding `seconds`."""
    b = h.bucket(seconds)
    return (0.0, 0.0) if b is None else (h.total - b[3], h.total - b[2])


@dataclass
class Count:
    judged: float = 0.0
    linear: float = 0.0
    exponential: float = 0.0
    low: float = 0.0
    high: float = 0.0

    def add(self, h: LatencyHistogram, slo: float) -> None:
        lin, exp = h.linear_share_within(slo), h.share_within(slo)
        if lin is None or exp is None:
            return
        lo, hi = bucket_bounds(h, slo)
        self.judged += h.total
        self.linear += (1.0 - lin) * h.total
        self.exponential += (1.0 - exp) * h.total
        self.low += lo
        self.high += hi


class Counting(Ours):
    """Ours as shipped; before each tick that starts a new rate window, the TTFT histogram it reads is counted."""

    def __init__(self, slo: float, policy: PolicySpec):
        super().__init__(policy)
        self.slo, self.count, self.next_read = slo, Count(), RATE_WINDOW_SECONDS

    def tick(self, now: float, ctx: Context) -> int | None:
        if now >= self.next_read:
            self.next_read += RATE_WINDOW_SECONDS
            h = ctx.view.signals(now).ttft_histogram
            if h is not None:
                self.count.add(h, self.slo)
        return super().tick(now, ctx)


def row(name: str, seconds: float | None) -> str:
    sc = load_scenario(name)
    limit = seconds if seconds is not None else sc.quick_limit_seconds
    policy = load_policy_file(default_policy_file())[0].spec
    slo = sc.slo.ttft_seconds
    ours = Counting(slo, policy)
    res = run(sc, build_workload(sc, limit), ours)
    c = ours.count
    if not c.judged > 0:
        return f"| {sc.name} | – | {100 * (1 - res.outcome.attainment):.3f}% | – | – | – |"

    def pct(x: float) -> str:
        return f"{100 * x / c.judged:.3f}%"

    return (f"| {sc.name} | {c.judged:,.0f} | {100 * (1 - res.outcome.attainment):.3f}% | {pct(c.linear)} | "
            f"{pct(c.exponential)} | {pct(c.low)} – {pct(c.high)} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="+", help="scenario names or YAML files")
    ap.add_argument("--seconds", type=arg_number(0, 366 * DAY, lo_open=True), default=None,
                    help="replay this much of each trace (default: quick)")
    args = ap.parse_args(argv)
    print("| scenario | requests read | missed in the replay | linear | exponential (the controller) | bounds |")
    print("|---|---|---|---|---|---|")
    for name in args.scenarios:
        print(row(name, args.seconds), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
