"""Which rate to try next, and where the knee is: pure functions of the stages measured so far.

The ramp multiplies the rate by `growth` until a stage breaks the SLO (or `max_rate` holds), then
bisects between the highest rate that held below the lowest that broke, `refine_steps` times or until
the two are within `tolerance` of each other. The knee is that highest holding rate. A stage that held
above one that broke (noise) does not move the knee up: the lowest break bounds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RampPlan:
    start_rate: float
    growth: float = 1.5
    max_rate: float = 1000.0
    refine_steps: int = 3
    tolerance: float = 0.05

    def __post_init__(self) -> None:
        if not self.start_rate > 0:
            raise ValueError(f"start rate must be > 0, got {self.start_rate}")
        if not self.growth > 1:
            raise ValueError(f"growth must be > 1, got {self.growth}")
        if self.max_rate < self.start_rate:
            raise ValueError(f"max rate ({self.max_rate}) is below the start rate ({self.start_rate})")
        if self.refine_steps < 0 or self.tolerance < 0:
            raise ValueError("refine steps and tolerance must be ≥ 0")


@dataclass(frozen=True, slots=True)
class Knee:
    rate: float | None  # highest rate that held below the lowest that broke; None: the first stage broke
    broke_at: float | None  # lowest rate that broke; None: the SLO held up to the highest rate tried

    @property
    def reached(self) -> bool:
        """True when a break was seen above the knee (else the knee is only a lower bound)."""
        return self.rate is not None and self.broke_at is not None


def find_knee(stages: Sequence[tuple[float, bool]]) -> Knee:
    """`stages`: (rate, SLO held) in the order measured."""
    broke = [r for r, ok in stages if not ok]
    bad = min(broke) if broke else None
    good = [r for r, ok in stages if ok and (bad is None or r < bad)]
    return Knee(max(good) if good else None, bad)


def next_rate(plan: RampPlan, stages: Sequence[tuple[float, bool]]) -> float | None:
    """The next rate to measure, or None when the knee is found (or cannot be)."""
    if not stages:
        return plan.start_rate
    k = find_knee(stages)
    if k.broke_at is None:
        last = max(r for r, _ in stages)
        return None if last >= plan.max_rate else min(plan.max_rate, last * plan.growth)
    if k.rate is None:
        return None
    first_break = next(i for i, (_, ok) in enumerate(stages) if not ok)
    refined = len(stages) - 1 - first_break
    if refined >= plan.refine_steps or k.broke_at <= k.rate * (1 + plan.tolerance):
        return None
    return 0.5 * (k.rate + k.broke_at)
