import numpy as np
import pytest

from forecasting import ForecastConfig, from_history, predict
from forecasting.bands import (
    MIN_ERROR_SAMPLES,
    band_pinball,
    column_offsets,
    column_pinballs,
    empirical_offsets,
    pinball_loss,
)


def test_bands_widen_with_horizon() -> None:
    rng = np.random.default_rng(0)
    y = 500 + rng.normal(0, 5, 3000).cumsum()  # a random walk: uncertainty grows with the horizon
    y = np.maximum(y - y.min() + 10, 0)
    config = ForecastConfig(method="holt", step_seconds=60.0)
    state = from_history(config, y)
    widths = []
    for horizon in (60.0, 900.0, 3600.0):
        f = predict(config, state, horizon, (0.1, 0.9), window="at")
        widths.append(f.quantiles[0.9] - f.quantiles[0.1])
    assert widths[0] < widths[1] < widths[2]


def test_quantile_is_point_plus_empirical_error_quantile() -> None:
    errors = np.arange(100, dtype=float)
    offsets = empirical_offsets(errors, (0.5, 0.9))
    assert offsets is not None and np.allclose(offsets, np.quantile(errors, (0.5, 0.9)))


def test_too_few_errors_fall_back() -> None:
    assert empirical_offsets(np.array([1.0, 2.0, np.nan]), (0.9,)) is None


def test_pinball_loss_penalises_under_forecasts_more_at_high_quantiles() -> None:
    assert pinball_loss(np.array([10.0]), np.array([8.0]), 0.9) > pinball_loss(
        np.array([10.0]), np.array([12.0]), 0.9
    )


def _error_block(seed: int, dtype: type, rows: int, columns: int, holes: bool) -> np.ndarray:
    """Errors with a different scale per column and, with `holes`, NaN/inf punched in so that columns
    keep different numbers of finite values (some below MIN_ERROR_SAMPLES, some at it, one empty)."""
    rng = np.random.default_rng(seed)
    block: np.ndarray = (rng.standard_t(3, size=(rows, columns))
                         * 10.0 ** rng.uniform(-2, 4, size=columns)).astype(dtype)
    block[rng.random((rows, columns)) < 0.05] = 0.0  # ties in the sort
    if holes:
        keep = [rows, rows - 1, MIN_ERROR_SAMPLES, MIN_ERROR_SAMPLES - 1, 0, rows // 3, rows, 47][:columns]
        for c, k in enumerate(keep):
            gone = rng.choice(rows, size=rows - min(k, rows), replace=False)
            block[gone, c] = rng.choice([np.nan, np.inf, -np.inf], size=len(gone))
    return block


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("holes", [False, True])
@pytest.mark.parametrize(("rows", "seed"), [(256, 0), (255, 1), (37, 2), (1024, 3)])
def test_column_functions_are_the_per_column_functions_bit_for_bit(
    dtype: type, holes: bool, rows: int, seed: int
) -> None:
    block = _error_block(seed, dtype, rows, 8, holes)
    quantiles = [0.01, 0.1, 0.5, 0.5 + 1e-12, 0.9, 0.95, 0.999999]
    offsets, short = column_offsets(block, quantiles)
    for q in (0.1, 0.5, 0.9, 0.95, 0.999999):
        losses = column_pinballs(block, q)
        for c in range(block.shape[1]):
            assert losses[c] == band_pinball(block[:, c], q)  # exactly, None included
    for c in range(block.shape[1]):
        want = empirical_offsets(block[:, c], quantiles)
        if want is None:
            assert c in short and np.isnan(offsets[c]).all()
        else:
            assert c not in short and offsets[c].tolist() == want.tolist()
