"""Policies by name, with the parameter each sweeps, and the `--baselines` syntax (`hpa:16,keda:5`)."""

from __future__ import annotations

from simulations.autoscalers.base import Autoscaler
from simulations.autoscalers.hpa import Hpa
from simulations.autoscalers.keda import Keda
from simulations.autoscalers.kpa import Kpa
from simulations.autoscalers.static import Static
from simulations.errors import SimulationInputError

# The value used when none is given: KEDA's production-stack threshold 5, Knative's
# container-concurrency-target-default 100, and (HPA has no default target) 32 running per pod.
DEFAULT_SETTING: dict[str, float] = {"static": 8, "hpa": 32, "keda": 5, "kpa": 100}
SETTING_NAME: dict[str, str] = {"static": "replicas", "hpa": "target", "keda": "threshold", "kpa": "concurrency"}
NAMES: tuple[str, ...] = ("static", "hpa", "keda", "kpa", "oracle")


def make_baseline(name: str, value: float) -> Autoscaler:
    if name == "static":
        return Static(int(value))
    if name == "hpa":
        return Hpa(value)
    if name == "keda":
        return Keda(value)
    if name == "kpa":
        return Kpa(value)
    raise SimulationInputError("--baselines", name, "unknown baseline", f"use {', '.join(NAMES)}")


def setting_label(name: str, value: float) -> str:
    return f"{SETTING_NAME[name]}={value:g}"


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
        if not value > 0 or (name == "static" and value != int(value)):
            raise SimulationInputError("--baselines", part, f"{raw} is not allowed",
                                       "use a positive number (static: a whole number of replicas)")
        out.append((name, value))
    return out
