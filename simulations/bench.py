"""The decision-quality benchmark (protocol §5): every scenario, every baseline's sweep, the headline.

Runs go to a `ProcessPoolExecutor` (2 workers); each worker loads a scenario's workload once. For each
policy family the cost to reach the SLO target is the lowest GPU-hours among its settings with attainment
≥ 99% (else its best attainment is reported). Headline per scenario: `ours / best baseline` and
`ours / oracle`.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable
from concurrent.futures import as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from simulations.autoscalers.ours import Ours
from simulations.autoscalers.registry import make_baseline, setting_label
from simulations.executors import make_executor
from simulations.runner import RunResult, run, run_oracle
from simulations.scenario import Scenario, SweepSpec, build_workload, bundled_path, load_scenario
from simulations.trace import BinnedWorkload, Trace

BASELINES = ("static", "hpa", "keda", "kpa")
MARK_START = "<!-- bench:decision-quality:start -->"
MARK_END = "<!-- bench:decision-quality:end -->"


@dataclass(frozen=True)
class Job:
    scenario: str
    policy: str  # ours | oracle | static | hpa | keda | kpa
    value: float | None
    quick: bool
    policy_file: str


@lru_cache(maxsize=2)
def _load(name: str, quick: bool) -> tuple[Scenario, Trace | BinnedWorkload]:
    sc = load_scenario(name)
    return sc, build_workload(sc, sc.quick_limit_seconds if quick else None)


def run_job(job: Job) -> dict[str, Any]:
    from autoscaler.policy_loader import load_policy_file

    sc, wl = _load(job.scenario, job.quick)
    res: RunResult
    if job.policy == "ours":
        res = run(sc, wl, Ours(load_policy_file(job.policy_file)[0].spec))
    elif job.policy == "oracle":
        res = run_oracle(sc, wl)
    else:
        assert job.value is not None
        res = run(sc, wl, make_baseline(job.policy, job.value), setting_label(job.policy, job.value))
    return {"scenario": job.scenario, "value": job.value, **res.to_dict()}


def jobs_for(scenarios: list[str], quick: bool, policy_file: str) -> list[Job]:
    jobs = []
    for name in scenarios:
        sc = load_scenario(name)
        sweeps: SweepSpec = (sc.quick or sc.sweeps) if quick else sc.sweeps
        jobs.append(Job(name, "ours", None, quick, policy_file))
        jobs.append(Job(name, "oracle", None, quick, policy_file))
        for fam in BASELINES:
            jobs.extend(Job(name, fam, float(v), quick, policy_file) for v in getattr(sweeps, fam))
    # longest first keeps both workers busy to the end
    weight = {"oracle": 3, "ours": 2}
    return sorted(jobs, key=lambda j: -weight.get(j.policy, 1))


def run_jobs(jobs: list[Job], workers: int = 2, on_done: Callable[[dict[str, Any]], None] | None = None,
             ray_address: str | None = None) -> list[dict[str, Any]]:
    out = []
    if workers <= 1 and ray_address is None:
        for j in jobs:
            out.append(run_job(j))
            if on_done:
                on_done(out[-1])
        return out
    with make_executor(workers, ray_address) as pool:
        futures = [pool.submit(run_job, j) for j in jobs]
        for f in as_completed(futures):
            out.append(f.result())
            if on_done:
                on_done(out[-1])
    return out


def headline(rows: list[dict[str, Any]], target: float = 0.99) -> list[dict[str, Any]]:
    """Per scenario: each family's cost to reach the target (or best attainment), and the ratios."""
    table = []
    for name in dict.fromkeys(r["scenario"] for r in rows):
        fams: dict[str, dict[str, Any]] = {}
        for fam in ("ours", *BASELINES, "oracle"):
            runs = [r for r in rows if r["scenario"] == name and r["policy"] == fam]
            if not runs:
                continue
            ok = [r for r in runs if r["attainment"] >= target]
            if ok:
                best = min(ok, key=lambda r: r["gpu_hours"])
                fams[fam] = {"reached": True, "gpu_hours": best["gpu_hours"], "attainment": best["attainment"],
                             "setting": best["setting"]}
            else:
                best = max(runs, key=lambda r: r["attainment"])
                fams[fam] = {"reached": False, "gpu_hours": best["gpu_hours"], "attainment": best["attainment"],
                             "setting": best["setting"]}
        reached = [(f, v) for f, v in fams.items() if f in BASELINES and v["reached"]]
        best_base = min(reached, key=lambda fv: fv[1]["gpu_hours"]) if reached else None
        ours = fams.get("ours")
        oracle = fams.get("oracle")
        row: dict[str, Any] = {"scenario": name, "families": fams,
                               "best_baseline": best_base[0] if best_base else None}
        if ours and ours["reached"] and best_base:
            row["ours_over_best_baseline"] = ours["gpu_hours"] / best_base[1]["gpu_hours"]
        if ours and ours["reached"] and oracle:
            row["ours_over_oracle"] = ours["gpu_hours"] / oracle["gpu_hours"]
        table.append(row)
    return table


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def _cell(f: dict[str, Any] | None) -> str:
    if f is None:
        return "–"
    if f["reached"]:
        return f"{f['gpu_hours']:.2f}" + (f" ({f['setting']})" if f["setting"] else "")
    return f"✗ best {100 * f['attainment']:.1f}%"


def markdown(table: list[dict[str, Any]], command: str, quick: bool) -> str:
    m = machine()
    lines = [
        "## Decision quality: cost to reach 99% TTFT-SLO attainment",
        "",
        f"Command: `{command}`  ",
        f"Machine: {m['cpus']} CPUs, Python {m['python']} ({m['platform']})."
        + (" Quick mode: shorter traces, fewer sweep points." if quick else ""),
        "",
        "GPU-hours of the cheapest setting of each policy family with ≥ 99% of requests within the TTFT SLO"
        " (2 s); ✗ = no setting reached it (best attainment shown). Lower is better.",
        "",
        "| scenario | ours | static | hpa | keda | kpa | oracle | ours / best baseline | ours / oracle |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in table:
        f = row["families"]
        ratio_b = row.get("ours_over_best_baseline")
        ratio_o = row.get("ours_over_oracle")
        lines.append(
            f"| {row['scenario']} | {_cell(f.get('ours'))} | {_cell(f.get('static'))} | {_cell(f.get('hpa'))} | "
            f"{_cell(f.get('keda'))} | {_cell(f.get('kpa'))} | {_cell(f.get('oracle'))} | "
            f"{f'{ratio_b:.2f}' if ratio_b else '–'} | {f'{ratio_o:.2f}' if ratio_o else '–'} |")
    lines.append("")
    return "\n".join(lines)


def write_markdown_section(path: Path, section: str) -> None:
    """Replace what is between the markers (creating the file or the markers if absent)."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
    block = f"{MARK_START}\n{section}\n{MARK_END}"
    if MARK_START in text and MARK_END in text:
        a = text.index(MARK_START)
        b = text.index(MARK_END) + len(MARK_END)
        text = text[:a] + block + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def default_policy_file() -> str:
    return str(bundled_path("default-policy.yaml"))


def command_line() -> str:
    return " ".join(["inference-autoscaler", "bench", *sys.argv[2:]])
