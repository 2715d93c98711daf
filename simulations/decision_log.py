"""Ours' decisions in a replay, one JSON line per tick: what `simulate` writes beside its report.

Each line holds the replay's second, the replica count the decision started from and the one it asked
for, its reason and binding constraint, whether panic was on, the message the controller would put in an
event, and every component of the decision's explanation (demand, capacity factor, load factor, the
candidates, stabilization, …): the same record the controller shows in the policy's status, so a replay
can be read tick by tick (`jq`, or pandas' `read_json(path, lines=True)`). Written as the replay runs,
so a long trace costs no memory; components a tick does not have are absent from its line.

`breakdown` reads a log back into what the replicas were for, on average (`simulate` prints it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

from autoscaler.core.decide import Decision
from autoscaler.core.reason import Reason


class DecisionLog:
    """Writes `Decision`s as JSON lines to `path` (created or truncated); use as a context manager."""

    def __init__(self, path: Path):
        self.path = path
        self.lines = 0
        self._file: IO[str] | None = None

    def __enter__(self) -> DecisionLog:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def write(self, seconds: float, d: Decision) -> None:
        if self._file is None:
            raise RuntimeError(f"{self.path}: DecisionLog.write outside its `with` block")
        row = {"t": round(seconds, 3), "current": d.current_replicas, "desired": d.desired_replicas, **d.why(),
               **{k: v for k, v in d.components.items() if math.isfinite(v)}}  # NaN and ∞ are no JSON: left out
        self._file.write(json.dumps(row, allow_nan=False) + "\n")
        self.lines += 1


# What each tick's count is made of, from the candidates the decision explains (autoscaler/core/candidates.py):
# the replicas the demand seen needs at the capacity learned for the SLO (offered work ÷ capacity factor),
# what the reactive count adds to that (the planned utilization's margin, the backlog's drain, rounding up),
# what the forecast's band adds above them, what the burst headroom (and its hold for a cold start after the
# replicas are up) adds above both, what a floor adds, and
# what the decision held above all of them (the scale-down window, the untested-load floor, unknown data's
# hold, the surge for replicas leaving).
PARTS = ("demand", "margin", "forecast", "burst", "floor", "held")
# The stacked levels a tick's count is split at, each the largest of the candidates named (as the explanation
# names them: `Candidates.asks`, plus `burst_held`, the burst hold with this tick's order) and of the level
# below it: reactive, then the forecast's and the concurrency's, then the burst candidates', then the floor.
# Every candidate the core asks for is in one level (tests check it).
LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("margin", ("reactive",)),
    ("forecast", ("predictive", "concurrency")),
    ("burst", ("hedge", "burst", "burst_held")),
    ("floor", ("floor",)),
)


# What held the replicas above every candidate, by the decision's reason (autoscaler/core/reason.py): the
# scale-down window, the scale-down rate limit, the untested-load floor (it names itself in the row), a
# panic's hold, unknown data's hold; anything else (the surge for leaving replicas, a held unschedulable
# count) is "other".
_HOLDER_WORDS = {"window": "the scale-down window", "rate": "the scale-down rate limit",
                 "untested": "the untested-load floor", "panic": "a panic's hold", "unknown": "unknown data's hold",
                 "other": "other holds"}
HOLDERS = tuple(_HOLDER_WORDS)
_HOLDER_OF_REASON = {Reason.STABILIZING.value: "window", Reason.SCALE_DOWN.value: "rate",
                     Reason.PANIC_HOLD.value: "panic", Reason.METRICS_MISSING.value: "unknown"}


def _holder(row: dict[str, object], desired: float) -> str:
    """Which of HOLDERS kept `desired` replicas above what the row's candidates asked for."""
    untested = row.get("untested_floor")
    if isinstance(untested, int | float) and untested >= desired:
        return "untested"
    return _HOLDER_OF_REASON.get(str(row.get("reason")), "other")


@dataclass(frozen=True, slots=True)
class Breakdown:
    """Mean replicas per tick over a decision log, split by what asked for them (`PARTS`)."""

    ticks: int
    parts: dict[str, float]  # mean replicas per tick, by part
    desired: float  # mean desired replicas per tick
    short: float  # mean replicas per tick the candidates asked for but the limits (rate, max) did not give
    held_by: dict[str, float] = field(default_factory=dict)  # parts["held"] split by what held it (HOLDERS)

    def to_dict(self) -> dict[str, object]:
        return {"ticks": self.ticks, "desired": round(self.desired, 3), "short": round(self.short, 3),
                **{p: round(v, 3) for p, v in self.parts.items()},
                "held_by": {h: round(v, 3) for h, v in self.held_by.items()}}

    def describe(self) -> str:
        """One paragraph: what ours' replicas were for, on average."""
        p = self.parts
        named = [("for the demand seen, at a replica's capacity at the SLO as learned so far", p["demand"]),
                 ("the planned utilization's margin and the backlog's drain", p["margin"]),
                 ("for the forecast's upper band one cold start ahead", p["forecast"]),
                 ("burst headroom and its hold", p["burst"]), ("floors", p["floor"]),
                 ("held above every candidate", p["held"])]
        said = [f"{'' if i == 0 else '+'}{v:.1f} {what}" for i, (what, v) in enumerate(named) if i == 0 or v >= 0.05]
        text = (f"Where ours' replicas went (mean over its {self.ticks:,} decisions, {self.desired:.1f} asked "
                f"for): " + "; ".join(said) + ".")
        holders = [f"{_HOLDER_WORDS[h]} {v:.1f}"
                   for h, v in sorted(self.held_by.items(), key=lambda x: -x[1]) if v >= 0.05]
        if holders:  # each holder is a part of `held`, so `held` is shown above
            text += " Held by: " + ", ".join(holders) + "."
        if self.short >= 0.05:
            text += f" The rate limits and replicas.max held back {self.short:.1f} on average."
        return text


def breakdown(path: Path) -> Breakdown:
    """The `Breakdown` of the decision log at `path` (ticks with no desired count are skipped)."""
    sums, held_by = dict.fromkeys(PARTS, 0.0), dict.fromkeys(HOLDERS, 0.0)
    desired = short = 0.0
    n = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row.get("desired") is None:
                continue
            got = float(row["desired"])
            levels, below = {}, 0.0
            for part, names in LEVELS:
                below = levels[part] = max(below, *(float(row.get(name, 0.0)) for name in names))
            reactive, asked = levels["margin"], min(below, float(row.get("max", math.inf)))
            factor = float(row.get("capacity_factor", 0.0))
            demand = min(reactive, asked, float(row.get("offered_work", 0.0)) / factor if factor > 0 else 0.0)
            sums["demand"] += demand
            under = demand
            for part, _ in LEVELS:  # each level's replicas above the one below it, as far as the ask reached
                sums[part] += max(0.0, min(levels[part], asked) - under)
                under = max(under, min(levels[part], asked))
            if got > asked:
                sums["held"] += got - asked
                held_by[_holder(row, got)] += got - asked
            short += max(0.0, asked - got)
            desired += got
            n += 1
    k = 1.0 / n if n else 0.0
    return Breakdown(n, {p: v * k for p, v in sums.items()}, desired * k, short * k,
                     {h: v * k for h, v in held_by.items()})
