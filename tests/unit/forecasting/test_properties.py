import math

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from forecasting import ForecastConfig, new_state, observe, predict

CONFIG = ForecastConfig(step_seconds=60.0, min_history_seconds=300.0, refit_every_seconds=600.0)
QUANTILES = (0.1, 0.5, 0.9, 0.99)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(
        st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=0,
        max_size=80,
    ),
    horizon=st.floats(min_value=0.0, max_value=7200.0),
    step=st.sampled_from([15.0, 60.0, 130.0]),
)
def test_predictions_are_finite_non_negative_and_monotone_in_q(
    values: list[float], horizon: float, step: float
) -> None:
    state = new_state(CONFIG)
    for i, v in enumerate(values):
        state = observe(CONFIG, state, i * step, v)
    for window in ("max", "at"):
        f = predict(CONFIG, state, horizon, QUANTILES, window=window)
        qs = [f.quantiles[q] for q in QUANTILES]
        assert math.isfinite(f.point) and f.point >= 0
        assert all(math.isfinite(v) and v >= 0 for v in qs)
        assert qs == sorted(qs)
