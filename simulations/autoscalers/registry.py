"""Policy families by name: how to build each, its main knob (searched) and its secondary knobs (swept).

Every family is a `Family`:
- `main`: the knob the bench bisects — numeric bounds, whether it is an integer, and its `direction`:
  `"cheaper_up"` when a larger value means fewer replicas (cheaper, lower attainment: a larger HPA target,
  KEDA threshold, KPA target or `ours` target utilization), `"costlier_up"` when a larger value means more
  replicas (static replicas, oracle headroom). The bounds can depend on a secondary setting (a queue-time
  target is in seconds, a request count is not): `main_for(settings)`.
- `knobs`: the secondary knobs an operator would tune for multi-minute cold starts, each with its default
  (first) and the candidate values worth sweeping.
- `make(value, settings, policy=None, scenario=None, workload=None)` builds the autoscaler (`ours` needs the
  policy, the oracle the scenario and workload it plans for); `label(value, settings)` names the setting in
  reports (main knob, the signal, then every secondary knob that differs from its default, e.g.
  `target=24 signal=waiting down_window=600`).

The oracle's reported cost is the cheaper of its bisected headroom plan and the cheapest constant plan
(which replays a static fleet exactly): `simulations.autoscalers.oracle.run_oracle` does both searches.

`make_baseline`, `setting_label`, `parse_baselines` keep the command-line syntax `hpa:16,keda:5,oracle`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from autoscaler.policy import CapacitySpec, PolicySpec
from simulations.autoscalers.base import Autoscaler
from simulations.autoscalers.hpa import Hpa, parse_policy
from simulations.autoscalers.keda import Keda
from simulations.autoscalers.kpa import Kpa
from simulations.autoscalers.oracle import Oracle
from simulations.autoscalers.ours import Ours, with_min_replicas, with_target_utilization
from simulations.autoscalers.static import Static
from simulations.errors import SimulationInputError
from simulations.scenario import Scenario
from simulations.trace import BinnedWorkload, Trace

Direction = Literal["cheaper_up", "costlier_up"]
# ours' searched knob starts where the policy field's own default is (one number, not two kept in step)
_DEFAULT_TARGET_UTILIZATION: float = CapacitySpec.model_fields["target_utilization"].default
Value = float | int | str


@dataclass(frozen=True)
class MainKnob:
    name: str
    default: float
    lo: float
    hi: float
    direction: Direction
    integer: bool = False
    unit: str = ""

    def check(self, value: float) -> None:
        if not self.lo <= value <= self.hi or (self.integer and value != int(value)):
            kind = "a whole number" if self.integer else "a number"
            raise ValueError(f"{self.name} must be {kind} within {self.lo:g}..{self.hi:g}, not {value:g}")


@dataclass(frozen=True)
class Knob:
    name: str
    candidates: tuple[Value, ...]  # the first is the default
    description: str = ""

    @property
    def default(self) -> Value:
        return self.candidates[0]


@dataclass(frozen=True)
class BuildContext:
    """What some families need besides their settings."""

    policy: PolicySpec | None = None
    scenario: Scenario | None = None
    workload: Trace | BinnedWorkload | None = None


Builder = Callable[[float, Mapping[str, Any], BuildContext], Autoscaler]


@dataclass(frozen=True)
class Family:
    name: str
    main: MainKnob
    build: Builder
    knobs: tuple[Knob, ...] = ()
    main_by_signal: Mapping[str, MainKnob] = field(default_factory=dict)
    description: str = ""

    def main_for(self, settings: Mapping[str, Any] | None = None) -> MainKnob:
        signal = (settings or {}).get("signal")
        return self.main_by_signal.get(str(signal), self.main) if signal is not None else self.main

    def defaults(self) -> dict[str, Value]:
        return {k.name: k.default for k in self.knobs}

    def resolve(self, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults overlaid with `settings`; unknown names are errors."""
        out: dict[str, Any] = self.defaults()
        for k, v in (settings or {}).items():
            if k not in out:
                known = ", ".join(out) or "none"
                raise ValueError(f"{self.name} has no setting {k!r} (known: {known})")
            out[k] = v
        return out

    def make(self, value: float, settings: Mapping[str, Any] | None = None, policy: PolicySpec | None = None,
             scenario: Scenario | None = None, workload: Trace | BinnedWorkload | None = None) -> Autoscaler:
        s = self.resolve(settings)
        self.main_for(s).check(value)
        return self.build(value, s, BuildContext(policy, scenario, workload))

    def label(self, value: float, settings: Mapping[str, Any] | None = None) -> str:
        s = self.resolve(settings)
        parts = [f"{self.main_for(s).name}={value:g}"]
        for k in self.knobs:
            v = s[k.name]
            if k.name == "signal" or v != k.default:
                parts.append(f"{k.name}={v:g}" if isinstance(v, float) else f"{k.name}={v}")
        return " ".join(parts)


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)


DOWN_WINDOWS: tuple[Value, ...] = (300.0, 600.0, 900.0)
DOWN_POLICIES: tuple[Value, ...] = ("100%/15s", "10%/60s", "1pod/60s")
MIN_REPLICAS: tuple[Value, ...] = (1, 2, 4)

FAMILIES: dict[str, Family] = {
    "static": Family(
        "static", MainKnob("replicas", 8, 1, 200, "costlier_up", integer=True),
        build=lambda v, s, c: Static(int(v)),
        description="a fixed replica count for the whole run"),
    "hpa": Family(
        "hpa", MainKnob("target", 32, 1, 256, "cheaper_up", unit="running requests per pod"),
        knobs=(
            Knob("signal", ("running", "waiting", "queue_p90"),
                 "Pods metric through prometheus-adapter: vllm:num_requests_running, "
                 "vllm:num_requests_waiting, or p90 queue time (s)"),
            Knob("down_window", DOWN_WINDOWS, "behavior.scaleDown.stabilizationWindowSeconds"),
            Knob("down_policy", DOWN_POLICIES, "behavior.scaleDown.policies (one policy)"),
            Knob("min_replicas", MIN_REPLICAS, "minReplicas"),
        ),
        main_by_signal={
            "running": MainKnob("target", 32, 1, 256, "cheaper_up", unit="running requests per pod"),
            "waiting": MainKnob("target", 4, 0.1, 256, "cheaper_up", unit="waiting requests per pod"),
            "queue_p90": MainKnob("target", 0.5, 0.01, 30, "cheaper_up", unit="seconds of p90 queue time"),
        },
        build=lambda v, s, c: Hpa(v, signal=str(s["signal"]), down_window_seconds=float(s["down_window"]),
                                  min_replicas=_opt_int(s["min_replicas"]),
                                  down_policies=parse_policy(str(s["down_policy"]))),
        description="Kubernetes HPA v2 (pkg/controller/podautoscaler)"),
    "keda": Family(
        "keda", MainKnob("threshold", 5, 0.1, 512, "cheaper_up", unit="waiting requests per replica"),
        knobs=(
            Knob("signal", ("waiting", "queue_p90"),
                 "Prometheus trigger: sum(vllm:num_requests_waiting) AverageValue, or p90 queue time (s) Value"),
            Knob("down_window", DOWN_WINDOWS, "advanced.horizontalPodAutoscalerConfig.behavior scale-down window"),
            Knob("down_policy", DOWN_POLICIES, "advanced.horizontalPodAutoscalerConfig.behavior scale-down policy"),
            Knob("min_replicas", (1, 0, 2, 4), "minReplicaCount (0: KEDA scales to zero after cooldownPeriod)"),
            Knob("cooldown", (300.0, 600.0, 900.0), "cooldownPeriod (only acts with minReplicaCount 0)"),
        ),
        main_by_signal={
            "waiting": MainKnob("threshold", 5, 0.1, 512, "cheaper_up", unit="waiting requests per replica"),
            "queue_p90": MainKnob("threshold", 0.5, 0.01, 30, "cheaper_up", unit="seconds of p90 queue time"),
        },
        build=lambda v, s, c: Keda(v, signal=str(s["signal"]), down_window_seconds=float(s["down_window"]),
                                   min_replicas=_opt_int(s["min_replicas"]),
                                   cooldown_seconds=float(s["cooldown"]),
                                   down_policies=parse_policy(str(s["down_policy"]))),
        description="KEDA ScaledObject with a Prometheus trigger, driving its generated HPA"),
    "kpa": Family(
        "kpa", MainKnob("target", 100, 1, 1024, "cheaper_up", unit="concurrent requests per pod (×70%)"),
        knobs=(
            Knob("scale_down_delay", (0.0, 300.0, 600.0, 900.0), "autoscaling.knative.dev/scale-down-delay"),
            Knob("window", (60.0, 180.0, 300.0), "autoscaling.knative.dev/window (stable window)"),
            Knob("min_replicas", MIN_REPLICAS, "autoscaling.knative.dev/min-scale"),
        ),
        build=lambda v, s, c: Kpa(v, stable_window_seconds=float(s["window"]),
                                  scale_down_delay_seconds=float(s["scale_down_delay"]),
                                  min_scale=_opt_int(s["min_replicas"])),
        description="Knative Pod Autoscaler on concurrency (pkg/autoscaler/scaling)"),
    # The lower bound is a measurement range, not a policy: with capacity learned at the SLO, 0.2 no longer
    # provisions for a 5x step (flash-crowd 86.8% at 0.2, 99.99% at 0.1), so the frontier could not show
    # ours' costly end on step bursts; 0.05 spans it (docs/benchmarks.md, "Decision changes").
    "ours": Family(
        "ours", MainKnob("target_utilization", _DEFAULT_TARGET_UTILIZATION, 0.05, 1.0, "cheaper_up",
                         unit="share of learned capacity"),
        knobs=(Knob("min_replicas", ("policy", 1, 2, 4), "replicas.min (policy: the policy file's own)"),),
        build=lambda v, s, c: _make_ours(v, c.policy, s["min_replicas"]),
        description="the decision core; its frontier sweeps capacity.targetUtilization"),
    "oracle": Family(
        "oracle", MainKnob("headroom", 1.0, 0.3, 4.0, "costlier_up", unit="× the trace's requirement"),
        build=lambda v, s, c: _make_oracle(v, c),
        description="perfect foresight of trace and cold starts (simulations.autoscalers.oracle); its cost is "
                    "the cheaper of the bisected headroom plan and the cheapest constant plan"),
}

BASELINES: tuple[str, ...] = ("static", "hpa", "keda", "kpa")
NAMES: tuple[str, ...] = (*BASELINES, "oracle")
DEFAULT_SETTING: dict[str, float] = {n: FAMILIES[n].main.default for n in BASELINES}
SETTING_NAME: dict[str, str] = {n: FAMILIES[n].main.name for n in (*BASELINES, "ours", "oracle")}


def ours_policy(policy: PolicySpec, minimum: Value = "policy") -> PolicySpec:
    """The policy with the `min_replicas` setting applied ("policy": as the file states it)."""
    return policy if minimum == "policy" else with_min_replicas(policy, int(minimum))


def _make_ours(value: float, policy: PolicySpec | None, minimum: Value = "policy") -> Autoscaler:
    if policy is None:
        raise ValueError("ours needs a policy")
    return Ours(with_target_utilization(ours_policy(policy, minimum), value))


def _make_oracle(value: float, c: BuildContext) -> Autoscaler:
    if c.scenario is None or c.workload is None:
        raise ValueError("the oracle plans for a scenario and its workload: pass both")
    return Oracle.for_scenario(c.scenario, c.workload, value)


def family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise SimulationInputError("--baselines", name, "unknown policy family",
                                   f"use {', '.join(FAMILIES)}") from None


def make_baseline(name: str, value: float, settings: Mapping[str, Any] | None = None) -> Autoscaler:
    if name not in BASELINES:
        raise SimulationInputError("--baselines", name, "unknown baseline", f"use {', '.join(NAMES)}")
    try:
        return FAMILIES[name].make(value, settings)
    except ValueError as e:
        raise SimulationInputError("--baselines", f"{name}:{value:g}", str(e), "see docs/baselines.md") from None


def setting_label(name: str, value: float, settings: Mapping[str, Any] | None = None) -> str:
    return family(name).label(value, settings)


def parse_baselines(text: str) -> list[tuple[str, float | None]]:
    """`hpa,keda:10,oracle` → [("hpa", 32), ("keda", 10), ("oracle", None)]."""
    out: list[tuple[str, float | None]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part or part in ("none", "ours"):
            continue
        name, _, raw = part.partition(":")
        if name not in NAMES:
            raise SimulationInputError("--baselines", part, f"unknown baseline {name!r}",
                                       f"use a comma list of {', '.join(NAMES)}, optionally NAME:VALUE")
        if name == "oracle":
            if raw:
                raise SimulationInputError("--baselines", part, "the oracle takes no value", "write just oracle")
            out.append((name, None))
            continue
        try:
            value = float(raw) if raw else DEFAULT_SETTING[name]
        except ValueError:
            raise SimulationInputError("--baselines", part, f"{raw!r} is not a number",
                                       f"write e.g. {name}:{DEFAULT_SETTING[name]:g}") from None
        try:
            FAMILIES[name].main.check(value)
        except ValueError as e:
            raise SimulationInputError("--baselines", part, str(e),
                                       "use a positive number (static: a whole number of replicas)") from None
        out.append((name, value))
    return out
