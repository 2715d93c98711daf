"""Median cost of one `decide` call of the decision core (target < 0.5 ms), and digests of its decisions.

Drives the core the way the simulator does: a warm state (an hour of 15-s ticks of a varying load), then
times each further call. Run: `python benchmarks/bench_decide.py [--calls N]`.

`--digest flash-crowd,azure-code:warm,...` instead replays scenarios (optionally with a cold-start
profile) with `ours` on the simulator and prints a SHA-256 of every Decision it made: run it before and
after a change to the core to show which replays the change moves (traces resolve against
$INFERENCE_AUTOSCALER_TRACES, as for `simulate`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import time
from importlib import resources
from pathlib import Path
from typing import ClassVar, cast

from rich.console import Console
from rich.table import Table

from autoscaler.cli.params import arg_count
from autoscaler.core import (
    ClusterFacts,
    CoreState,
    Decision,
    Measured,
    ReplicaCounts,
    Signals,
    StartingReplica,
    decide,
    forecast_config,
)
from autoscaler.policy_loader import load_policy_file

EPOCH = 1704096000.0  # a Monday, 08:00 UTC


def signals(i: int) -> Signals:
    load = 1.0 + 0.5 * math.sin(i / 40.0)
    age = 5.0
    return Signals(
        request_rate=Measured(40.0 * load, age),
        prompt_tokens_rate=Measured(46000.0 * load, age),
        generation_tokens_rate=Measured(8400.0 * load, age),
        running=Measured(120.0 * load, age),
        waiting=Measured(3.0 if i % 7 == 0 else 0.0, age),
        kv_cache_usage=Measured(0.4, age),
        queue_time_p90_seconds=Measured(0.2, age),
        ttft_p90_seconds=Measured(0.5, age),
        replicas=ReplicaCounts(desired=8, ready=7, starting=(StartingReplica("weight_load", 130.0, 10.0),)),
        cluster=ClusterFacts(free_replica_slots=0, image_cached=True),
    )


def digest(names: list[str]) -> None:
    """Replay each scenario with the default policy and print a digest of all its decisions."""
    from simulations.autoscalers.base import Context
    from simulations.autoscalers.ours import Ours
    from simulations.runner import run
    from simulations.scenario import build_workload, bundled_path, load_scenario

    class Recording(Ours):
        sha = hashlib.sha256()
        reasons: ClassVar[dict[str, int]] = {}

        def tick(self, now: float, ctx: Context) -> int | None:
            desired = super().tick(now, ctx)
            d = cast(Decision, self.last_decision)
            self.sha.update(repr((now, d.desired_replicas, d.current_replicas, d.reason.value, d.binding,
                                  sorted(d.components.items()), d.lead_time_seconds, d.forecast_work, d.panic,
                                  d.metrics_fresh, d.unschedulable_stuck, d.message)).encode())
            self.reasons[d.reason.value] = self.reasons.get(d.reason.value, 0) + 1
            return desired

    spec = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    for name in names:
        base, _, cold = name.partition(":")
        scenario = load_scenario(base)
        if cold:
            scenario = scenario.with_cold_start(cold)
        Recording.sha, Recording.reasons = hashlib.sha256(), {}
        res = run(scenario, build_workload(scenario), Recording(spec))
        summary = {"decisions": sum(Recording.reasons.values()), "digest": Recording.sha.hexdigest()[:16],
                   "gpu_hours": round(res.outcome.gpu_hours, 4), "reasons": Recording.reasons}
        print(name, json.dumps(summary), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=arg_count(1, 10_000_000), default=3000)
    ap.add_argument("--digest", metavar="SCENARIO[:COLD],...", help="print decision digests of these replays")
    args = ap.parse_args()
    if args.digest:
        digest(args.digest.split(","))
        return
    policy_file = Path(str(resources.files("simulations") / "data" / "default-policy.yaml"))
    spec = load_policy_file(policy_file)[0].spec
    fcfg = forecast_config(spec)
    state = CoreState()
    t = EPOCH
    for i in range(240):  # one hour of history
        state = decide(spec, signals(i), state, t, fcfg).state
        t += 15.0
    times = []
    for i in range(240, 240 + args.calls):
        s = signals(i)
        t0 = time.perf_counter_ns()
        state = decide(spec, s, state, t, fcfg).state
        times.append((time.perf_counter_ns() - t0) / 1e6)
        t += 15.0
    times.sort()
    table = Table(title=f"decide(): {args.calls} calls, default policy, warm state")
    for col in ("median ms", "p90 ms", "p99 ms", "max ms", "target"):
        table.add_column(col, justify="right")
    med = statistics.median(times)
    table.add_row(f"{med:.3f}", f"{times[int(0.9 * len(times))]:.3f}", f"{times[int(0.99 * len(times))]:.3f}",
                  f"{times[-1]:.1f}", "< 0.5 ms " + ("[green]met[/]" if med < 0.5 else "[red]missed[/]"))
    Console().print(table)


if __name__ == "__main__":
    main()
