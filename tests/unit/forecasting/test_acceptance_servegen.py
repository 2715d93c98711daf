"""Acceptance: on ServeGen m-large aggregate demand, auto beats seasonal-naive at q=0.9, 1 h ahead,
and its 0.9 quantile covers 85-95% of outcomes."""

import pytest

from forecasting.evaluate import rolling_origin
from forecasting.series import load_series
from simulations.scenario import bundled_traces_dir

TRACE = bundled_traces_dir() / "servegen" / "aggregate_rate_10min.csv"  # shipped with the package


@pytest.fixture(scope="module")
def scores() -> dict[str, object]:
    series = load_series(TRACE, "language_m-large_rps")
    assert series.step_seconds == 600.0
    history_steps = 7 * 86400 // 600
    results = rolling_origin(
        series.values, 600.0, 3600.0, 0.9, ("auto", "seasonal-naive", "last"), history_steps
    )
    return {r.method: r for r in results}


def test_auto_beats_seasonal_naive_on_pinball_loss(scores: dict) -> None:
    assert scores["auto"].pinball_loss < scores["seasonal-naive"].pinball_loss


def test_auto_upper_quantile_covers_85_to_95_percent(scores: dict) -> None:
    assert 0.85 <= scores["auto"].coverage <= 0.95
