"""fetch_history on frames like PrometheusRange answers: the policy's series on the step grid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autoscaler.backtest import fetch_history
from autoscaler.sources.engines import SignalName
from autoscaler.sources.histogram import quantile_of
from tests.unit.sources.helpers import msp

START, STEP = 1000.0, 60.0


def rows(labels: dict[str, str], values: dict[int, float]) -> pd.DataFrame:
    """A series' samples at grid steps {step index: value}, as MetricRangeDataFrame makes them."""
    idx = pd.Index([START + STEP * k for k in values], name="timestamp", dtype=float)
    return pd.DataFrame({**labels, "value": list(values.values())}, index=idx)


class FakeRange:
    url = "http://prometheus.test"

    def __init__(self, buckets: dict[str, dict[int, float]]) -> None:
        self.buckets = buckets
        self.queries: list[str] = []

    def query_range(self, promql: str, start: float, end: float, step_seconds: float) -> pd.DataFrame:
        assert (start, step_seconds) == (START, STEP)
        self.queries.append(promql)
        ours = {"namespace": "prod", "model_name": "m"}
        other = {"namespace": "prod", "model_name": "other"}
        if "_bucket" in promql:
            if "queue_time" not in promql:
                return rows({}, {}).iloc[0:0]
            return pd.concat([rows({**ours, "le": le}, v) for le, v in self.buckets.items()]
                             + [rows({**other, "le": "+Inf"}, {0: 1e6})])
        if promql.startswith("count"):
            return rows(ours, {0: 2.0, 1: 2.0, 2: 3.0, 3: 3.0})
        return pd.concat([rows(other, {0: 99.0, 1: 99.0, 2: 99.0, 3: 99.0}), rows(ours, {0: 1.0, 1: 2.0, 3: 4.0})])


def test_the_policys_series_land_on_the_grid_with_gaps_as_nan() -> None:
    src = FakeRange({"1": {0: 5.0, 1: 0.0}, "+Inf": {0: 10.0, 1: 0.0}})
    h = fetch_history(src, msp("m", namespace="prod"), START, START + 3 * STEP, STEP)
    assert list(h.times) == [1000.0, 1060.0, 1120.0, 1180.0]
    np.testing.assert_array_equal(h.signals[SignalName.PROMPT_TOKENS_RATE], [1.0, 2.0, np.nan, 4.0])
    np.testing.assert_array_equal(h.replicas, [2, 2, 3, 3])
    assert h.value(SignalName.PROMPT_TOKENS_RATE, 2) is None and h.value(SignalName.PROMPT_TOKENS_RATE, 3) == 4.0
    assert h.queries == len(src.queries) == len(SignalName) + 1
    hists = h.histograms[SignalName.QUEUE_TIME_P90]
    first = hists[0]
    assert first is not None and first.total == 10.0  # the other model's buckets are not mixed in
    assert hists[1] is not None and hists[1].total == 0.0 and hists[2] is None and hists[3] is None
    p90 = h.signals[SignalName.QUEUE_TIME_P90]
    assert p90[0] == pytest.approx(quantile_of(0.9, first)) and np.isnan(p90[2])
    assert all(x is None for x in h.histograms[SignalName.TTFT_P90])


def test_buckets_that_are_not_one_series_per_le_give_no_histogram() -> None:
    src = FakeRange({"1": {0: 5.0}, "1.0": {0: 6.0}, "+Inf": {0: 10.0}})  # two series for le=1
    h = fetch_history(src, msp("m", namespace="prod"), START, START + 3 * STEP, STEP)
    assert h.histograms[SignalName.QUEUE_TIME_P90] == [None] * 4
    assert np.isnan(h.signals[SignalName.QUEUE_TIME_P90]).all()


def test_an_empty_range_is_refused() -> None:
    with pytest.raises(ValueError, match="--end"):
        fetch_history(FakeRange({}), msp("m"), START, START, STEP)


@pytest.mark.parametrize(("start", "end", "step", "match"), [
    (START, float("inf"), STEP, "--end"),
    (float("nan"), START + 3600, STEP, "--end"),
    (START, START + 1e12, 1.0, "at most 1,000,000"),  # once a 10¹²-row frame (numpy: 'Maximum allowed size')
])
def test_a_range_no_replay_can_hold_is_refused_before_any_query(start: float, end: float, step: float,
                                                                 match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fetch_history(FakeRange({}), msp("m"), start, end, step)


@pytest.mark.parametrize(("start", "end", "message"), [
    ("nan", "3600", "Invalid value for --start: 'nan' is not a time in 1970..9999"),
    ("-1e308", "3600", "Invalid value for --start"),
    ("0", "1e308", "Invalid value for --end"),
    ("0", "1e11", "steps from --start to --end; at most 1,000,000"),
    ("2024-13-01", "3600", "Invalid value for --start: '2024-13-01' is neither"),
])
def test_the_cli_names_a_time_flag_no_backtest_can_replay(start: str, end: str, message: str) -> None:
    from click.testing import CliRunner

    from autoscaler.cli import main

    policy = sorted(Path("policies").glob("*.yaml"))[0]
    result = CliRunner().invoke(main, ["backtest", "--prometheus", "http://127.0.0.1:9", "--policy", str(policy),
                                       "--start", start, "--end", end])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
