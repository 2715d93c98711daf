from __future__ import annotations

import pytest

from forecasting import ForecastConfig, ForecastState, from_history

from .synthetic import daily_series


@pytest.fixture
def fitted() -> tuple[ForecastConfig, ForecastState]:
    config = ForecastConfig(step_seconds=600.0)
    return config, from_history(config, daily_series(4, 600.0))
