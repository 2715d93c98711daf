"""Simulator speed (protocol §6): a 1-hour request-level replay with `ours` (target < 2 s) and a 14-day fluid
replay at 1-s resolution with a 10-s control interval (target < 60 s). Wall time of the replay itself;
loading and generating the workload is reported apart.

Run: `python benchmarks/bench_simulator.py [--skip-fluid] [--repeat N]`. With `--repeat N` each replay runs N times
and the fastest is reported (on a shared machine one run can be 1.5x slower than the next). The CPU seconds of the
replay are reported too: on a machine shared with other jobs they are the steadier number.

The request-level replica is vLLM V1's scheduler step by step (simulations/engine_step.py); before it was (a
one-prefill-at-a-time model) the azure-conv replay took 1.1 CPU-s, with it 2.7 CPU-s (docs/vllm-replica-model.md).
"""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from autoscaler.cli.params import arg_count
from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.ours import Ours
from simulations.bench import default_policy_file, machine
from simulations.runner import run
from simulations.scenario import build_workload, load_scenario


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-fluid", action="store_true")
    ap.add_argument("--repeat", type=arg_count(1, 1000), default=1, help="replay each case N times, report the fastest")
    args = ap.parse_args()
    spec = load_policy_file(default_policy_file())[0].spec
    m = machine()
    table = Table(title=f"simulator speed ({m['cpus']} CPUs, Python {m['python']})")
    for col in ("replay", "requests", "decisions", "load s", "replay s", "replay CPU s", "requests/s", "target"):
        table.add_column(col, justify="left" if col == "replay" else "right")
    cases: list[tuple[str, float, float | None]] = [("azure-code", 2.0, None), ("azure-conv", 2.0, None)]
    if not args.skip_fluid:
        cases.append(("servegen-large", 60.0, 10.0))
    for name, target, interval in cases:
        sc = load_scenario(name)
        t0 = time.perf_counter()
        wl = build_workload(sc)
        load_s = time.perf_counter() - t0
        ours = Ours(spec, interval_seconds=interval)
        c0 = time.process_time()
        res = run(sc, wl, ours)
        cpu = time.process_time() - c0
        for _ in range(args.repeat - 1):
            c0 = time.process_time()
            again = run(sc, wl, Ours(spec, interval_seconds=interval))
            cpu = min(cpu, time.process_time() - c0)
            res = again if again.wall_seconds < res.wall_seconds else res
        ticks = int(wl.duration_seconds / ours.interval_seconds)
        days = wl.duration_seconds / 86400
        kind = "request-level 1 h" if sc.fidelity == "request" else f"fluid {days:.0f} d, 1-s bins"
        ok = "[green]met[/]" if res.wall_seconds < target else "[red]missed[/]"
        table.add_row(f"{name} ({kind}, ours every {ours.interval_seconds:g} s)", f"{res.outcome.requests:,.0f}",
                      f"{ticks:,}", f"{load_s:.1f}", f"{res.wall_seconds:.2f}", f"{cpu:.2f}",
                      f"{res.outcome.requests / res.wall_seconds:,.0f}", f"< {target:g} s {ok}")
    Console().print(table)


if __name__ == "__main__":
    main()
