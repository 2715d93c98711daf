"""Ours' decisions in a replay, one JSON line per tick: what `simulate` writes beside its report.

Each line holds the replay's second, the replica count the decision started from and the one it asked
for, its reason and binding constraint, whether panic was on, the message the controller would put in an
event, and every component of the decision's explanation (demand, capacity factor, load factor, the
candidates, stabilization, …): the same record the controller shows in the policy's status, so a replay
can be read tick by tick (`jq`, or pandas' `read_json(path, lines=True)`). Written as the replay runs,
so a long trace costs no memory; components a tick does not have are absent from its line.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import TracebackType
from typing import IO

from autoscaler.core.decide import Decision


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
        row = {"t": round(seconds, 3), "current": d.current_replicas, "desired": d.desired_replicas,
               "reason": d.reason.value, "binding": d.binding, "panic": d.panic, "message": d.message,
               **{k: v for k, v in d.components.items() if math.isfinite(v)}}  # NaN and ∞ are no JSON: left out
        self._file.write(json.dumps(row, allow_nan=False) + "\n")
        self.lines += 1
