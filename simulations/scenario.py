"""Scenarios (docs/benchmark-protocol.md §1): trace + scaling + replica profile + cold-start profile + SLO, as YAML.

Files live in `simulations/scenarios/`; unknown keys are errors. A relative trace path is looked up in
`$INFERENCE_AUTOSCALER_TRACES` (a folder of your own traces) when it is set, then in the traces shipped
with the package (`simulations/data/traces/`, see its README for sources and licences); a compressed copy
(`NAME.gz`, `NAME.xz`, `NAME.bz2`, or `NAME.csv.*` for a ServeGen folder name) counts as the file.
`bundled:NAME` is a file shipped in `simulations/data/`.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from datetime import datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from autoscaler.policy import DAY, MAX_REPLICAS, revised
from autoscaler.policy_loader import yaml_problem
from simulations.errors import SimulationInputError
from simulations.profiles import COLD_START_PROFILES, ClusterSpec, ColdStartName, ColdStartProfile, ServingProfile
from simulations.synthetic import diurnal_workload, flash_crowd_trace
from simulations.trace import MAX_CLONE, BinnedWorkload, Trace
from simulations.trace_loaders import load_azure_csv, load_jsonl, servegen_workload

TRACES_ENV = "INFERENCE_AUTOSCALER_TRACES"
COMPRESSED_VARIANTS = ("", ".gz", ".xz", ".bz2", ".csv", ".csv.gz", ".csv.xz", ".csv.bz2")
MONDAY_2024 = "2024-01-01T00:00:00+00:00"
YEAR = 366 * DAY
# A synthetic burst's peak: far above one model's traffic in the traces, and ~10⁷ requests in 10 minutes, what a
# request-level replay can hold.
MAX_PEAK_RPS = 20_000.0


class _Model(BaseModel):
    # No infinities or NaN, and every number within physical bounds: a bad scenario is named when it is read,
    # not when a replay runs out of memory or time.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TraceSpec(_Model):
    format: Literal["azure", "jsonl", "servegen", "flash-crowd", "diurnal"]
    path: str | None = Field(None, description="relative to the traces folder, or bundled:NAME")
    clone: float | None = Field(None, gt=0, le=MAX_CLONE, description="request-level scaling: each request k times")
    rate_factor: float | None = Field(None, gt=0, le=MAX_CLONE, description="rate scaling for binned workloads")
    token_source: str = Field("azure_llm_2023_conv.csv", description="token lengths for rate-only traces")
    limit_seconds: float | None = Field(None, gt=0, le=YEAR, description="use only the first N seconds")
    # A later window of a long trace (ServeGen's 14 days: a day the default policy was not tuned on). The
    # limit (and bench --quick's) then counts from here, and the trace's clock moves with it, so weekdays
    # and time-of-day floors stay those of the window.
    client: int | None = Field(None, ge=0, le=1_000_000,
                               description="servegen: one client's traffic alone (a model only it uses)")
    start_seconds: float = Field(0.0, ge=0, le=YEAR,
                                 description="skip the first N seconds of a recorded trace (azure, jsonl, servegen)")
    prompt_scale: float | None = Field(
        None, gt=0, le=100, description="multiply every prompt length (request-level traces): long-prompt studies")
    # synthetic shapes
    base_rps: float = Field(20.0, gt=0, le=10_000)
    burst_factor: float = Field(5.0, ge=1, le=1000)
    burst_start_seconds: float = Field(3000.0, ge=0, le=YEAR)
    burst_ramp_seconds: float = Field(30.0, ge=0, le=YEAR)
    burst_hold_seconds: float = Field(600.0, gt=0, le=YEAR)
    duration_seconds: float = Field(7200.0, ge=60, le=YEAR, description="a minute or more")
    peak_to_trough: float = Field(3.0, ge=1, le=1000)
    noise_sigma: float = Field(0.1, ge=0, le=3, description="lognormal sigma of the rate noise")

    @model_validator(mode="after")
    def _consistent(self) -> TraceSpec:
        if self.format in ("azure", "jsonl", "servegen") and not self.path:
            raise ValueError(f"format {self.format} needs a path")
        if self.client is not None and self.format != "servegen":
            raise ValueError("client picks one ServeGen client: use it with format servegen")
        if self.format == "flash-crowd" and self.base_rps * self.burst_factor > MAX_PEAK_RPS:
            raise ValueError(f"base_rps × burst_factor is a peak of {self.base_rps * self.burst_factor:g} requests/s; "
                             f"at most {MAX_PEAK_RPS:g} (a request-level replay holds every request in memory)")
        if self.start_seconds and self.format not in ("azure", "jsonl", "servegen"):
            raise ValueError(f"start_seconds skips part of a recorded trace; format {self.format} is generated: "
                             f"move its burst_start_seconds or shorten duration_seconds instead")
        return self


class SloSpec(_Model):
    ttft_seconds: float = Field(2.0, gt=0, le=3600)
    target_attainment: float = Field(0.99, gt=0, le=1)
    # the TTFT budget grows by this per 1,000 prompt tokens (autoscaler.core.slo.ttft_budget; docs/slo.md)
    ttft_seconds_per_kilo_prompt_tokens: float | None = Field(None, ge=0, le=60)


class Scenario(_Model):
    name: str
    description: str = ""
    trace: TraceSpec
    fidelity: Literal["request", "fluid"] = "request"
    bin_seconds: float = Field(1.0, ge=0.1, le=600, description="fluid model bin")
    serving: ServingProfile = ServingProfile()
    cold_start: ColdStartName | ColdStartProfile = "typical"
    cluster: ClusterSpec = ClusterSpec(gpus_per_node=1)
    slo: SloSpec = SloSpec()
    initial_replicas: int = Field(2, ge=1, le=MAX_REPLICAS)
    min_replicas: int = Field(1, ge=0, le=MAX_REPLICAS, description="floor for the baselines and the oracle")
    max_replicas: int = Field(60, ge=1, le=MAX_REPLICAS)
    start_time: str | None = Field(None, description="ISO time of t = 0; default: the trace's own, else a Monday")
    seed: int = Field(1, ge=0, le=2**63 - 1)
    quick_limit_seconds: float | None = Field(None, gt=0, le=YEAR, description="trace length for bench --quick")
    evaluation_only: bool = Field(False, description="left out of the default bench set (run it by name)")

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas ({self.min_replicas}) > max_replicas ({self.max_replicas})")
        if self.start_time is not None:
            try:
                datetime.fromisoformat(self.start_time)
            except ValueError as e:
                raise ValueError(f"start_time {self.start_time!r} is not an ISO time") from e
        if self.slo.ttft_seconds_per_kilo_prompt_tokens and self.fidelity != "request":
            raise ValueError("slo.ttft_seconds_per_kilo_prompt_tokens needs fidelity: request (the fluid model "
                             "scores one flat TTFT budget)")
        if self.trace.prompt_scale is not None and self.trace.format not in ("azure", "jsonl"):
            raise ValueError("trace.prompt_scale applies to request-level traces (format azure or jsonl)")
        return self

    @property
    def cold_start_profile(self) -> ColdStartProfile:
        if isinstance(self.cold_start, ColdStartProfile):
            return self.cold_start
        return COLD_START_PROFILES[self.cold_start]

    def with_cold_start(self, name: str) -> Scenario:
        return revised_scenario(self, f"cold start {name!r}", cold_start=name)


def bundled_path(name: str) -> Path:
    return Path(str(resources.files("simulations") / "data" / name))


def bundled_traces_dir() -> Path:
    return bundled_path("traces")


def trace_roots() -> list[Path]:
    """Where relative trace paths are looked up, first match wins: $INFERENCE_AUTOSCALER_TRACES, then the
    bundled traces."""
    own = os.environ.get(TRACES_ENV)
    return ([Path(own).expanduser()] if own else []) + [bundled_traces_dir()]


def resolve_trace_path(path: str) -> Path:
    """A scenario's trace path → an existing file or folder (see the module docstring for the order)."""
    if path.startswith("bundled:"):
        return bundled_path(path.removeprefix("bundled:"))
    try:
        p = Path(path).expanduser()
    except RuntimeError as e:  # "~name/..." for a user this machine does not know
        raise SimulationInputError(path, "trace.path", str(e).rstrip("."), "give the path without ~user") from None
    if p.is_absolute():
        return p
    for root in trace_roots():
        for suffix in COMPRESSED_VARIANTS:
            candidate = root / p.parent / (p.name + suffix)
            try:
                if candidate.exists():
                    return candidate
            except OSError:  # a name too long for the file system, say: no such file there
                continue
    looked = " and ".join(str(r) for r in trace_roots())
    raise SimulationInputError(path, "trace.path", f"not found in {looked}",
                               f"put the file there, set ${TRACES_ENV} to the folder that holds it, "
                               "or give an absolute path")


def scenario_dir() -> Path:
    return Path(str(resources.files("simulations") / "scenarios"))


def scenario_names() -> list[str]:
    return sorted(p.stem for p in scenario_dir().glob("*.yaml"))


def bench_scenario_names() -> list[str]:
    """The scenarios `bench` runs by default: all but the evaluation-only ones."""
    return [n for n in scenario_names() if not load_scenario(n).evaluation_only]


def load_scenario(name_or_file: str) -> Scenario:
    """A scenario by name (simulations/scenarios/NAME.yaml) or by file path."""
    p = Path(name_or_file)
    if not (p.suffix in (".yaml", ".yml") and p.exists()):
        p = scenario_dir() / f"{name_or_file}.yaml"
        if not p.exists():
            raise SimulationInputError(name_or_file, "scenario", "no such scenario or file",
                                       f"use one of {', '.join(scenario_names())} or a YAML path")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SimulationInputError(str(p), "", f"cannot read ({e})", "pass a readable UTF-8 YAML file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        line, problem = yaml_problem(e, text)
        raise SimulationInputError(f"{p}:{line}" if line is not None else str(p), "", f"YAML syntax error ({problem})",
                                   "fix the YAML") from None
    except RecursionError:
        raise SimulationInputError(str(p), "", "YAML nesting is too deep", "fix the YAML") from None
    return parse_scenario(data, str(p))


def parse_scenario(data: object, source: str = "<scenario>") -> Scenario:
    if not isinstance(data, dict):
        raise SimulationInputError(source, "", "a scenario must be a YAML mapping", "see simulations/scenarios/")
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise _input_error(source, e) from None


def _input_error(source: str, e: ValidationError) -> SimulationInputError:
    """pydantic's first problem as one line naming `source`, the field and the fix."""
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    if err["type"] == "extra_forbidden":
        return SimulationInputError(source, loc, "unknown key", "check the spelling; unknown keys are not ignored")
    return SimulationInputError(source, loc, str(err["msg"]), "see the field's description in simulations/scenario.py")


def revised_scenario(sc: Scenario, source: str, **changes: object) -> Scenario:
    """`sc` with `changes` (a mapping for a nested field, such as `trace`, is merged into it), checked as a
    scenario file is: a bad value is a one-line error naming `source` (the flag that asked for it) and the
    field, never a scenario outside its bounds (`model_copy` does not validate)."""
    try:
        return revised(sc, **changes)
    except ValidationError as e:
        raise _input_error(source, e) from None


def _token_trace(path: str) -> Trace:
    return _load_token_trace(str(resolve_trace_path(path)))  # cached by the file found, not the name asked


@lru_cache(maxsize=4)
def _load_token_trace(resolved: str) -> Trace:
    return load_azure_csv(resolved)


def start_epoch(scenario: Scenario, trace_epoch: float | None) -> float:
    if scenario.start_time is not None:
        return datetime.fromisoformat(scenario.start_time).timestamp()
    if trace_epoch:
        return trace_epoch
    return datetime.fromisoformat(MONDAY_2024).timestamp()


def build_workload(scenario: Scenario, limit_seconds: float | None = None) -> Trace | BinnedWorkload:
    """The scenario's workload, scaled: a `Trace` for request-level runs, a `BinnedWorkload` for fluid."""
    spec = scenario.trace
    limit = limit_seconds or spec.limit_seconds
    start = spec.start_seconds
    seed = scenario.seed
    wl: Trace | BinnedWorkload
    if spec.format in ("azure", "jsonl"):
        assert spec.path is not None
        p = resolve_trace_path(spec.path)
        trace = load_azure_csv(p) if spec.format == "azure" else load_jsonl(p)
        if start and not trace.arrival_s[-1] >= start:
            raise SimulationInputError(scenario.name, "trace.start_seconds", f"no request arrives after {start:g} s",
                                       f"start before the trace's last request ({trace.arrival_s[-1]:g} s)")
        if limit or start:
            trace = trace.window(start, start + limit if limit else math.inf)
        if spec.clone:
            trace = trace.clone(spec.clone, seed=seed)
        if spec.prompt_scale is not None:
            trace = replace(trace, prompt_tokens=np.maximum(1, np.rint(trace.prompt_tokens * spec.prompt_scale)
                                                            ).astype(np.int64), block_hashes=None)
        wl = trace
    elif spec.format == "flash-crowd":
        tokens = _token_trace(spec.token_source)
        duration = min(spec.duration_seconds, limit) if limit else spec.duration_seconds
        wl = flash_crowd_trace(tokens, spec.base_rps, spec.burst_factor, spec.burst_start_seconds,
                               spec.burst_ramp_seconds, spec.burst_hold_seconds, duration, seed)
    elif spec.format == "diurnal":
        tokens = _token_trace(spec.token_source)
        duration = min(spec.duration_seconds, limit) if limit else spec.duration_seconds
        wl = diurnal_workload(tokens, spec.base_rps, spec.peak_to_trough, spec.noise_sigma, duration,
                              scenario.bin_seconds, seed)
    else:  # servegen
        assert spec.path is not None
        tokens = _token_trace(spec.token_source)
        wl = servegen_workload(resolve_trace_path(spec.path), tokens, spec.rate_factor or 1.0,
                               scenario.bin_seconds, seed, max_seconds=start + limit if limit else None,
                               client=spec.client)
        if start:
            wl = wl.skip(start, scenario.name)
    if isinstance(wl, BinnedWorkload) and spec.rate_factor and spec.format != "servegen":
        wl = wl.scaled(spec.rate_factor)
    if scenario.fidelity == "fluid" and isinstance(wl, Trace):
        wl = wl.binned(scenario.bin_seconds)
    if scenario.fidelity == "request" and isinstance(wl, BinnedWorkload):
        raise SimulationInputError(scenario.name, "fidelity", "a rate workload cannot run request-level",
                                   "set fidelity: fluid")
    return wl


def demand_replicas(workload: Trace | BinnedWorkload, serving: ServingProfile, bin_seconds: float = 1.0,
                    reference_batch: float = 64.0) -> np.ndarray:
    """Work arriving per bin in replica-equivalents: prompt / prefill rate + output tokens at the decode
    cost per token of a replica running `reference_batch` sequences. Used for plots and by the oracle."""
    per_token = serving.itl(reference_batch) / reference_batch
    if isinstance(workload, Trace):
        workload = workload.binned(bin_seconds)
    work = workload.prompt_tokens / serving.prefill_tokens_per_second + workload.output_tokens * per_token
    return np.asarray(work / workload.bin_seconds)
