"""A compact, persistable form of the forecaster's memory.

The full forecaster state holds up to 14 days of 1-minute buckets plus error rings (hundreds of KB as
JSON): too large to rewrite into a Kubernetes status every tick. What a restart must not lose is the
demand history the models are fitted on; the fitted parameters and error bands are rebuilt from it by
one refit. So the status keeps the history, averaged down to at most MAX_POINTS buckets and packed as
float32 (about 11 KB), and the core rebuilds the forecaster from it at its first tick.
"""

from __future__ import annotations

import base64
import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from forecasting import ForecastConfig, ForecastState, from_history

MAX_POINTS = 2016  # 14 days at 10 minutes


@dataclass(frozen=True, slots=True)
class ForecastSeed:
    step_seconds: float  # width of one value below
    first_t_seconds: float  # start of the first value's bucket
    values: tuple[float, ...]  # bucket means, oldest first; the last one is the open bucket

    @staticmethod
    def of(state: ForecastState, step_seconds: float) -> ForecastSeed | None:
        if state.bucket_index is None:
            return None
        closed = state.history.to_array()
        open_mean = state.bucket_sum / state.bucket_count if state.bucket_count else (
            float(closed[-1]) if len(closed) else 0.0)
        series = np.append(closed, open_mean)
        k = max(1, math.ceil(len(series) / MAX_POINTS))
        if k > 1:  # average whole groups of k, aligned to the newest value
            drop = len(series) % k
            series = series[drop:].reshape(-1, k).mean(axis=1)
            start_index = state.history.start_index + drop
        else:
            start_index = state.history.start_index
        return ForecastSeed(step_seconds * k, start_index * step_seconds, tuple(float(x) for x in series))

    def carried_to(self, t_seconds: float, history_seconds: float) -> ForecastSeed:
        """This history with its last value carried over the buckets missing before `t_seconds` (as the
        forecaster's observe() would carry it), keeping at most `history_seconds` of it. Unchanged when
        nothing is missing or the gap is longer than the history (the forecaster then starts over)."""
        if not self.values:
            return self
        n = len(self.values)
        gap = math.floor((t_seconds - self.first_t_seconds) / self.step_seconds + 1e-9) - n
        if not 0 < gap < history_seconds / self.step_seconds:
            return self
        keep = max(1, math.ceil(history_seconds / self.step_seconds)) + 1
        values = (*self.values, *(self.values[-1],) * gap)[-keep:]
        first_t = self.first_t_seconds + (n + gap - len(values)) * self.step_seconds
        return ForecastSeed(self.step_seconds, first_t, values)

    def rebuild(self, config: ForecastConfig) -> ForecastState:
        """The forecaster after replaying this history, on the policy's current configuration."""
        repeat = max(1, round(self.step_seconds / config.step_seconds))
        values = np.repeat(np.asarray(self.values, dtype=float), repeat)
        return from_history(config, values, self.first_t_seconds)

    def to_dict(self) -> dict[str, Any]:
        packed = zlib.compress(np.asarray(self.values, dtype="<f4").tobytes(), 6)
        return {"stepSeconds": self.step_seconds, "firstTSeconds": self.first_t_seconds,
                "values": base64.b64encode(packed).decode("ascii")}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ForecastSeed:
        raw = zlib.decompress(base64.b64decode(d["values"]), bufsize=MAX_POINTS * 4 + 64)
        values = np.frombuffer(raw[: MAX_POINTS * 4 + 4], dtype="<f4")
        return ForecastSeed(float(d["stepSeconds"]), float(d["firstTSeconds"]), tuple(float(x) for x in values))
