"""Configuration of the online forecaster: one frozen pydantic model, validated at the boundary."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Method = Literal["auto", "holt", "seasonal", "last", "seasonal-naive"]


class ForecastConfig(BaseModel):
    """How the online forecaster buckets, remembers, refits and scores.

    All durations are seconds. The defaults suit per-minute demand with daily and weekly seasonality.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method = "auto"
    step_seconds: float = Field(60.0, gt=0, description="bucket width of the internal series")
    history_seconds: float = Field(14 * 86400.0, gt=0, description="history kept for refits (ring buffer)")
    refit_every_seconds: float = Field(3600.0, gt=0, description="refit cadence; refits run inside observe")
    min_history_seconds: float = Field(
        1800.0, ge=0, description="below this much history, forecast the last value with a wide band"
    )
    season_candidates_seconds: tuple[float, ...] = (86400.0, 604800.0)
    tracked_horizons_seconds: tuple[float, ...] = Field(
        (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0),
        description="horizons at which forecast errors are recorded; bands interpolate between them",
    )
    error_samples: int = Field(256, ge=8, le=4096, description="forecast errors kept per method and horizon")
    damped: bool = Field(True, description="fit a damping factor for the Holt trend")

    @model_validator(mode="after")
    def _check_durations(self) -> ForecastConfig:
        if self.history_seconds < self.step_seconds:
            raise ValueError(
                f"history_seconds ({self.history_seconds}) must be at least "
                f"step_seconds ({self.step_seconds})"
            )
        if not self.tracked_horizons_seconds or min(self.tracked_horizons_seconds) <= 0:
            raise ValueError("tracked_horizons_seconds must hold at least one horizon, all > 0")
        if any(c <= 0 for c in self.season_candidates_seconds):
            raise ValueError("season_candidates_seconds must all be > 0")
        return self

    @property
    def history_steps(self) -> int:
        return max(2, round(self.history_seconds / self.step_seconds))

    @property
    def tracked_horizon_steps(self) -> tuple[int, ...]:
        """Tracked horizons in buckets: rounded, at least 1, unique, ascending."""
        steps = {max(1, round(h / self.step_seconds)) for h in self.tracked_horizons_seconds}
        return tuple(sorted(steps))
