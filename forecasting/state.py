"""The forecaster's state between ticks: a small immutable value with a JSON-safe dict form.

Arrays held here are never written after the state is built (they are flagged read-only); every
`observe` builds new ones. Equality compares contents, so tests can assert "unchanged".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from forecasting.history import History

STATE_VERSION = 1
MODEL_METHODS = ("holt", "seasonal", "last", "seasonal-naive")  # axis 1 of `errors`
PAST_COLUMNS = 5  # bucket value, holt level, holt trend, seasonal-residual level, seasonal-residual trend


class HoltState(NamedTuple):
    alpha: float
    beta: float
    phi: float
    level: float
    trend: float
    sigma: float  # one-step error spread from the last fit


class SeasonalState(NamedTuple):
    period_steps: int
    profile: tuple[float, ...]  # offset per absolute phase (bucket_index % period_steps)
    holt: HoltState  # on the de-seasonalised series


def frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, slots=True, eq=False)
class ForecastState:
    history: History  # means of closed buckets
    bucket_index: int | None  # the open bucket (None before the first observation)
    bucket_sum: float
    bucket_count: int
    last_t_seconds: float
    last_refit_index: int | None  # history.end_index at the last refit
    period_steps: int | None  # season used by seasonal-naive and seasonal
    holt: HoltState | None
    seasonal: SeasonalState | None
    past: (
        np.ndarray
    )  # [max tracked horizon, PAST_COLUMNS]: values and model states after recent closes (NaN: none)
    errors: np.ndarray  # [error_samples, len(MODEL_METHODS), tracked horizons]: actual - forecast (NaN: none)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ForecastState):
            return NotImplemented
        return (
            self.history == other.history
            and self.bucket_index == other.bucket_index
            and self.bucket_sum == other.bucket_sum
            and self.bucket_count == other.bucket_count
            and self.last_t_seconds == other.last_t_seconds
            and self.last_refit_index == other.last_refit_index
            and self.period_steps == other.period_steps
            and self.holt == other.holt
            and self.seasonal == other.seasonal
            and np.array_equal(self.past, other.past, equal_nan=True)
            and np.array_equal(self.errors, other.errors, equal_nan=True)
        )

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self, significant_digits: int | None = 6) -> dict[str, Any]:
        """JSON-safe form (NaN becomes null). Floats keep `significant_digits` (None: exact)."""

        def r(x: float) -> float | None:
            if not math.isfinite(x):
                return None
            return float(f"{x:.{significant_digits}g}") if significant_digits else float(x)

        def rl(a: np.ndarray) -> list[Any]:
            if a.ndim > 1:
                return [rl(row) for row in a]
            return [r(x) for x in a.tolist()]

        def holt(h: HoltState | None) -> list[float | None] | None:
            return None if h is None else [r(x) for x in h]

        return {
            "version": STATE_VERSION,
            "history": {
                "capacity": self.history.capacity,
                "end_index": self.history.end_index,
                "values": rl(self.history.to_array()),
            },
            "bucket": {"index": self.bucket_index, "sum": r(self.bucket_sum), "count": self.bucket_count},
            "last_t_seconds": self.last_t_seconds,
            "last_refit_index": self.last_refit_index,
            "period_steps": self.period_steps,
            "holt": holt(self.holt),
            "seasonal": None
            if self.seasonal is None
            else {
                "period_steps": self.seasonal.period_steps,
                "profile": [r(x) for x in self.seasonal.profile],
                "holt": holt(self.seasonal.holt),
            },
            "past": rl(self.past),
            "errors": rl(self.errors),
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> ForecastState:
        """Inverse of `to_dict`; raises ValueError naming the field when the data is not a state."""
        try:
            if data.get("version") != STATE_VERSION:
                raise ValueError(f"version is {data.get('version')!r}; this code reads {STATE_VERSION}")

            def arr(x: Any, dtype: type = float) -> np.ndarray:
                return frozen(np.array(_nan(x), dtype=dtype))

            def holt(x: list[float] | None) -> HoltState | None:
                return None if x is None else HoltState(*(float(v) for v in _nan(x)))

            h = data["history"]
            b = data["bucket"]
            s = data["seasonal"]
            seasonal = None
            if s is not None:
                residual_holt = holt(s["holt"])
                if residual_holt is None:
                    raise ValueError("seasonal.holt is missing")
                profile = tuple(float(v) for v in s["profile"])
                seasonal = SeasonalState(int(s["period_steps"]), profile, residual_holt)
            return ForecastState(
                history=History.from_array(int(h["capacity"]), int(h["end_index"]), arr(h["values"])),
                bucket_index=None if b["index"] is None else int(b["index"]),
                bucket_sum=float(b["sum"]),
                bucket_count=int(b["count"]),
                last_t_seconds=float(data["last_t_seconds"]),
                last_refit_index=None if data["last_refit_index"] is None else int(data["last_refit_index"]),
                period_steps=None if data["period_steps"] is None else int(data["period_steps"]),
                holt=holt(data["holt"]),
                seasonal=seasonal,
                past=arr(data["past"]).reshape(-1, PAST_COLUMNS),
                errors=arr(data["errors"], np.float32),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a forecast state: missing or malformed field {exc}") from exc


def _nan(x: Any) -> Any:
    """Map JSON nulls back to NaN, recursively."""
    if x is None:
        return float("nan")
    if isinstance(x, list):
        return [_nan(v) for v in x]
    return x
