"""The decision-quality benchmark (protocol §4–5) as a list of independent jobs.

One job = one scenario × one policy family × one setting of its secondary knobs: a search
(`simulations.search`) for the cheapest main-knob value reaching 99% attainment, or, for `ours`, one
replay of the shipped default policy (also with its priors scaled, e.g. ×0.7 and ×1.3), or one replay of a
family at a given main-knob value (a "fixed" job: benchmarks/transfer.py replays the settings one search
found on other traffic). Jobs run on an `Executor` (processes by default); each returns plain data, so the
result does not depend on where or in which order jobs ran. A failing job comes back as a `JobError`
carrying one line, whatever the executor.

`headline` turns the job records into the per-scenario table (`simulations.bench_report` renders it).
"""

from __future__ import annotations

import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from autoscaler.policy import PolicySpec, revised
from simulations.autoscalers import registry
from simulations.autoscalers.ours import Ours
from simulations.errors import SimulationInputError
from simulations.executors import make_executor
from simulations.fidelity import fleet_mode
from simulations.runner import run
from simulations.scenario import Scenario, build_workload, bundled_path, load_scenario
from simulations.search import (
    FAMILIES,
    Knob,
    Point,
    Secondary,
    fmt,
    knobs_for,
    main_knob,
    replay,
    search,
    with_secondary,
)
from simulations.trace import BinnedWorkload, Trace

BASELINES = ("static", "hpa", "keda", "kpa")
FAMILY_ORDER = ("ours", *BASELINES, "oracle")
TARGET = 0.99
OFF_PRIORS = (0.7, 1.3)  # protocol rows: ours with every prior off by -30% / +30%
# Ours with every prior a hundredth of a percent apart, which is physically nothing: a verdict that flips there
# is one path the learner happened to take, not the policy's (docs/benchmarks.md, "The replay set's noise floor").
NUDGES = (0.9999, 1.0001)
PRIORS_SCALES = (*OFF_PRIORS, *NUDGES)
# The priors `--priors-scales` multiplies: the capacity prior and the cold-start stage medians.
PRIOR_RATES = ("prompt_tokens_per_second", "generation_tokens_per_second")
PRIOR_STAGES = ("scheduling_seconds", "node_provisioning_seconds", "image_pull_seconds", "weight_load_seconds",
                "warmup_seconds")
MARK_START = "<!-- bench:decision-quality:start -->"
MARK_END = "<!-- bench:decision-quality:end -->"


def priors_key(scale: float) -> str:
    """How a headline row's `priors` names the run at this scale ("0.7", "1.0001")."""
    return f"{scale:g}"


class JobError(Exception):
    """A job that failed, as one line (and the worker's traceback for --verbose). Pickles: plain args."""

    def __init__(self, message: str, detail: str = "", user_error: bool = False):
        super().__init__(message, detail, user_error)
        self.message, self.detail, self.user_error = message, detail, user_error

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Job:
    scenario: str  # a name or a YAML path
    family: str  # ours | oracle | static | hpa | keda | kpa
    kind: str  # "search" | "default" (ours as shipped) | "fixed" (the family at `value`, no search)
    secondary: Secondary
    quick: bool
    policy_file: str
    priors_scale: float = 1.0
    value: float | None = None  # the main knob's value for a "fixed" job

    @property
    def title(self) -> str:
        sec = ", ".join(f"{k}={fmt(v)}" for k, v in self.secondary)
        what = f"{self.family} {self.kind}" + (f" priors×{self.priors_scale:g}" if self.priors_scale != 1 else "")
        return f"{self.scenario}: {what}" + (f" ({sec})" if sec else "")


# ---------------------------------------------------------------- building one replay


@lru_cache(maxsize=2)
def load_replay(name: str, quick: bool, mode: str) -> tuple[Scenario, Trace | BinnedWorkload]:
    """Scenario `name` (a bundled name or a file) at fleet model `mode`, and its workload (cut to the quick
    run's length when `quick`): what a bench job replays."""
    sc = load_scenario(name)
    if mode != sc.fidelity:
        sc = revised(sc, fidelity=mode)
    return sc, build_workload(sc, sc.quick_limit_seconds if quick else None)


@lru_cache(maxsize=4)
def policy_spec(path: str) -> PolicySpec:
    """The spec of the first policy in the file at `path`."""
    from autoscaler.policy_loader import load_policy_file

    return load_policy_file(path)[0].spec


def ours_replay(name: str, priors_scale: float = 1.0) -> tuple[Scenario, Trace | BinnedWorkload, PolicySpec]:
    """What the bench's `ours default` job replays on scenario `name`: the scenario at ours' fleet model, its
    quick workload, and the default policy with every prior × `priors_scale`."""
    sc, wl = load_replay(name, True, fleet_mode(load_scenario(name).fidelity, "ours"))
    return sc, wl, scaled_priors(policy_spec(default_policy_file()), priors_scale)


def scaled_priors(spec: PolicySpec, k: float) -> PolicySpec:
    """Every prior the policy states (capacity and cold-start medians) multiplied by `k`, within the policy's
    bounds: a factor that takes one outside them is a one-line error naming the field."""
    if k == 1:
        return spec
    cap, cs = spec.capacity, spec.cold_start
    try:
        return revised(spec, capacity={f: getattr(cap, f) * k for f in PRIOR_RATES},
                       cold_start={f: getattr(cs, f) * k for f in PRIOR_STAGES})
    except ValidationError as e:
        err = e.errors()[0]
        raise SimulationInputError(f"priors × {k:g}", ".".join(str(x) for x in err["loc"]), str(err["msg"]),
                                   "use a factor that keeps every prior within the policy's bounds") from None


def _run_record(job: Job, knob: Knob | None, value: float | None, sc: Scenario, wl: Trace | BinnedWorkload,
                policy: PolicySpec) -> dict[str, Any]:
    main = [knob.label(value)] if knob is not None and value is not None else []
    label = ", ".join(main + [f"{k}={fmt(v)}" for k, v in job.secondary])
    if value is None:  # ours as shipped (with the operator's floor when the job sets one)
        minimum = dict(job.secondary).get("min_replicas", "policy")
        res = run(sc, wl, Ours(registry.ours_policy(policy, minimum)), label)
    else:
        res = replay(job.family, value, job.secondary, sc, wl, policy, label, TARGET)
    return {**res.to_dict(), "value": value}


# ---------------------------------------------------------------- one job


def run_job(job: Job) -> dict[str, Any]:
    """One job's record (plain data). Raises `JobError` with one line on any failure."""
    try:
        return _run_job(job)
    except JobError:
        raise
    except SimulationInputError as e:
        raise JobError(str(e), user_error=True) from None
    except Exception as e:  # a bug: keep the traceback as detail, one line as the message
        raise JobError(f"{job.title}: {type(e).__name__}: {e}", traceback.format_exc()) from None


def _run_job(job: Job) -> dict[str, Any]:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    base = load_scenario(job.scenario)
    mode: str = job_fleet_mode(base.fidelity, job.family, job.secondary)
    if not runnable(base.fidelity, job.family, job.secondary):
        raise JobError(f"{job.title}: the fluid fleet is not validated for this family and signal "
                       "(simulations/fidelity.py), and a binned workload has no request-level replay that "
                       "fits: not run", user_error=True)
    sc0, wl = load_replay(job.scenario, job.quick, mode)
    sc = with_secondary(sc0, job.secondary)
    policy = scaled_priors(policy_spec(job.policy_file), job.priors_scale)
    record: dict[str, Any] = {"scenario": sc.name, "family": job.family, "kind": job.kind,
                              "secondary": dict(job.secondary), "priors_scale": job.priors_scale,
                              "fleet_mode": mode, "quick": job.quick}
    if job.kind in ("default", "fixed"):
        if job.kind == "fixed" and job.value is None:
            raise JobError(f"{job.title}: a fixed replay needs the main knob's value", user_error=True)
        knob = main_knob(job.family, job.secondary, job.quick) if job.kind == "fixed" else None
        r = _run_record(job, knob, job.value, sc, wl, policy)
        record.update(points=[r], winner=r, reached=r["attainment"] >= TARGET, knob=None, exact=None,
                      monotone=None, violations=[], stopped_by="")
    else:
        knob = main_knob(job.family, job.secondary, job.quick)
        assert knob is not None

        def evaluate(v: float) -> Point:
            r = _run_record(job, knob, v, sc, wl, policy)
            return Point(v, r["attainment"], r["gpu_hours"], r)

        start = float(sc.initial_replicas) if job.family == "static" else None
        res = search(evaluate, knob, TARGET, start=start, probe_beyond=not job.quick)
        record.update(points=[p.run for p in res.points], winner=res.best.run, reached=res.reached,
                      knob={"name": knob.name, "lo": knob.lo, "hi": knob.hi, "cheaper": knob.cheaper,
                            "tol": None if knob.integer else knob.tol, "unit": knob.unit},
                      exact=res.exact, monotone=res.monotone, violations=[list(v) for v in res.violations],
                      stopped_by=res.stopped_by, boundary={"reach": res.reach, "miss": res.miss})
    record["wall_seconds"] = round(time.perf_counter() - wall0, 3)
    record["cpu_seconds"] = round(time.process_time() - cpu0, 3)  # for time estimates on a shared machine
    record["runs"] = len(record["points"])
    return record


def job_fleet_mode(scenario_mode: str, family: str, secondary: tuple[tuple[str, Any], ...]) -> str:
    """`fleet_mode` for a job: the signal, for the families that choose one, is among its settings."""
    signal = dict(secondary).get("signal")
    return fleet_mode(scenario_mode, family, str(signal) if signal is not None else None)


def runnable(scenario_mode: str, family: str, secondary: tuple[tuple[str, Any], ...]) -> bool:
    """Whether the bench runs this family and setting on a scenario of that fidelity: a fluid scenario
    has no request-level replay that fits the bench (millions of requests a day), so a family or signal
    the fluid fleet is not validated for (simulations/fidelity.py) is not run there."""
    return not (scenario_mode == "fluid" and job_fleet_mode(scenario_mode, family, secondary) == "request")


def jobs_for(scenarios: Sequence[str], quick: bool, policy_file: str,
             priors_scales: Sequence[float] = PRIORS_SCALES) -> list[Job]:
    """Every job of the bench, the longest first (so the workers stay busy to the end)."""
    jobs: list[Job] = []
    for k in priors_scales:  # fail here, in one line, on a factor that takes a prior out of its bounds
        scaled_priors(policy_spec(policy_file), k)
    for name in scenarios:
        fidelity = load_scenario(name).fidelity  # fail here, in one line, on a bad name or file
        jobs.append(Job(name, "ours", "default", (), quick, policy_file))
        jobs.extend(Job(name, "ours", "default", (), quick, policy_file, k) for k in priors_scales if k != 1)
        for fam in FAMILY_ORDER:
            if fam not in FAMILIES:
                continue
            _, combos = knobs_for(fam, quick)
            jobs.extend(Job(name, fam, "search", c, quick, policy_file) for c in combos
                        if runnable(fidelity, fam, c))
    weight = {"kpa": 3.0, "oracle": 3.0, "ours": 1.5}
    fluid = {n: load_scenario(n).fidelity == "fluid" for n in scenarios}
    return sorted(jobs, key=lambda j: (-(weight.get(j.family, 1.0) * (1 if j.kind == "default" else 6)
                                         * (10 if fluid[j.scenario] else 1)), j.scenario))


# ---------------------------------------------------------------- running jobs


class InlineExecutor(Executor):
    """Runs each job in the caller, at submit: the same code path as a pool, one process."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        f: Future[Any] = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # handed back through the future, as a pool does
            f.set_exception(e)
        return f


def make_local_executor(workers: int) -> Executor:
    return ProcessPoolExecutor(max_workers=workers) if workers > 1 else InlineExecutor()


def run_jobs(jobs: Sequence[Job], workers: int = 2,
             on_done: Callable[[int, Job, dict[str, Any]], None] | None = None,
             ray_address: str | None = None) -> list[dict[str, Any]]:
    """Every job's record, in the order of `jobs`. The first failure cancels the rest and is raised.
    Local processes (inline for one worker) unless `ray_address` names a Ray cluster (docs/ray.md)."""
    out: list[dict[str, Any] | None] = [None] * len(jobs)
    executor = make_executor(workers, ray_address) if ray_address else make_local_executor(workers)
    try:
        futures = {executor.submit(run_job, j): i for i, j in enumerate(jobs)}
        for f in as_completed(futures):
            i = futures[f]
            out[i] = f.result()
            if on_done is not None:
                on_done(i, jobs[i], out[i])  # type: ignore[arg-type]
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
    return [r for r in out if r is not None]


# ---------------------------------------------------------------- the headline


def _summary(rec: dict[str, Any]) -> dict[str, Any]:
    w = rec["winner"]
    sec = ", ".join(f"{k}={fmt(v)}" for k, v in rec["secondary"].items())
    return {"reached": w["attainment"] >= TARGET, "gpu_hours": w["gpu_hours"], "attainment": w["attainment"],
            "setting": w["setting"], "value": w.get("value"), "secondary": sec, "exact": rec.get("exact"),
            "monotone": rec.get("monotone"), "stopped_by": rec.get("stopped_by", ""), "runs": rec["runs"]}


def _best(recs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Across a family's searches: the cheapest winner reaching the target, else the best attainment."""
    if not recs:
        return None
    sums = [_summary(r) for r in recs]
    ok = [s for s in sums if s["reached"]]
    best = min(ok, key=lambda s: s["gpu_hours"]) if ok else max(sums, key=lambda s: (s["attainment"],
                                                                                    -s["gpu_hours"]))
    best = dict(best)
    best["searches"] = len(recs)
    best["monotone"] = all(s["monotone"] is not False for s in sums)
    return best


def headline(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per scenario: ours (default policy), each family's cheapest tuned setting, the oracle, ratios, flags."""
    table = []
    for name in dict.fromkeys(r["scenario"] for r in records):
        recs = [r for r in records if r["scenario"] == name]
        fams: dict[str, dict[str, Any] | None] = {}
        default = [r for r in recs if r["kind"] == "default" and r["priors_scale"] == 1]
        fams["ours"] = _best(default)
        fams["ours_tuned"] = _best([r for r in recs if r["family"] == "ours" and r["kind"] == "search"])
        for fam in (*BASELINES, "oracle"):
            fams[fam] = _best([r for r in recs if r["family"] == fam and r["kind"] == "search"])
        # Every constant plan is an oracle plan too (with foresight one may still choose a fixed fleet), so
        # the oracle is the cheaper of its foresight plan and the cheapest static fleet reaching the target.
        st, orc = fams.get("static"), fams.get("oracle")
        if st is not None and st["reached"] and (orc is None or not orc["reached"]
                                                 or st["gpu_hours"] < orc["gpu_hours"]):
            fams["oracle"] = {**st, "setting": f"constant plan ({st['setting']})"}
        priors = {priors_key(r["priors_scale"]): _summary(r) for r in recs
                  if r["kind"] == "default" and r["priors_scale"] != 1}
        reached = [(f, v) for f, v in fams.items() if f in BASELINES and v is not None and v["reached"]]
        best_base = min(reached, key=lambda fv: fv[1]["gpu_hours"]) if reached else None
        ours, oracle = fams["ours"], fams["oracle"]
        # The nudged runs whose verdict (99% reached or not) differs from the shipped run's.
        fragile = [k for k in map(priors_key, NUDGES)
                   if k in priors and ours is not None and priors[k]["reached"] != ours["reached"]]
        row: dict[str, Any] = {"scenario": name, "families": fams, "priors": priors, "fragile": fragile,
                               "best_baseline": best_base[0] if best_base else None,
                               "ours_over_best_baseline": None, "ours_over_oracle": None, "room_captured": None}
        if ours and ours["reached"] and best_base:
            row["ours_over_best_baseline"] = ours["gpu_hours"] / best_base[1]["gpu_hours"]
        if ours and ours["reached"] and oracle and oracle["reached"]:
            row["ours_over_oracle"] = ours["gpu_hours"] / oracle["gpu_hours"]
            if best_base and best_base[1]["gpu_hours"] > oracle["gpu_hours"]:
                b, o = best_base[1]["gpu_hours"], oracle["gpu_hours"]
                row["room_captured"] = (b - ours["gpu_hours"]) / (b - o)
        ours_ok = bool(ours and ours["reached"])
        reasons = {
            "ours_over_best_baseline": "ours (default policy) does not reach 99%" if not ours_ok
            else "no tuned baseline reaches 99%",
            "ours_over_oracle": "ours (default policy) does not reach 99%" if not ours_ok
            else "the oracle does not reach 99%",
            "room_captured": "needs ours, a baseline and the oracle at 99%, the oracle cheaper than the baseline",
        }
        for key, why in reasons.items():
            if row[key] is None:
                row[f"{key}_null_reason"] = why
        # the oracle must bound everyone: flag any family (ours included) reaching the target cheaper
        beaten = [f for f, v in fams.items() if f != "oracle" and v is not None and v["reached"]
                  and (oracle is None or not oracle["reached"] or v["gpu_hours"] < oracle["gpu_hours"])]
        beaten += [f"ours priors×{k}" for k, v in priors.items() if v["reached"]
                   and (oracle is None or not oracle["reached"] or v["gpu_hours"] < oracle["gpu_hours"])]
        row["oracle_broken"] = bool(beaten)
        row["oracle_beaten_by"] = beaten
        table.append(row)
    return table


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def write_markdown_section(path: Path, section: str, start: str = MARK_START, end: str = MARK_END) -> None:
    """Replace what is between the markers (creating the file or the markers if absent)."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
    block = f"{start}\n{section}\n{end}"
    if start in text and end in text:
        a = text.index(start)
        b = text.index(end) + len(end)
        text = text[:a] + block + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def default_policy_file() -> str:
    return str(bundled_path("default-policy.yaml"))


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as recorded in reports: the options that shape results and documents, without
    private output paths (`--json`, `--out`, `--from-json`)."""
    args = list(sys.argv[2:] if argv is None else argv)
    kept: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        name = a.split("=", 1)[0]
        if name in ("--json", "--out", "--from-json"):
            skip = "=" not in a
            continue
        kept.append(a)
    return " ".join(["inference-autoscaler", "bench", *kept])
