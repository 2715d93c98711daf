"""slo_count: how the controller's SLO count from a TTFT histogram compares with the requests themselves."""

from __future__ import annotations

import math

import pytest

from autoscaler.core.signals import LatencyHistogram
from benchmarks.slo_count import bucket_bounds, main

BOUNDS = (0.5, 1.0, 2.5, 5.0, float("inf"))


def _hist(latencies: list[float]) -> LatencyHistogram:
    return LatencyHistogram(BOUNDS, tuple(float(sum(x <= b for x in latencies)) for b in BOUNDS), 0.0)


def test_an_exponential_tail_inside_the_bucket_is_counted_exactly_where_linear_overcounts() -> None:
    # 100,000 requests whose survival past 1 s halves every 0.25 s: at 2 s, 1/256 of those past 1 s remain.
    past_one, scale = 20_000, 0.25 / math.log(2)
    tail = [1.0 + scale * -math.log((i + 0.5) / past_one) for i in range(past_one)]
    h = _hist([0.3] * 80_000 + tail)
    true_miss = sum(x > 2.0 for x in tail) / 100_000
    exp_miss = 1.0 - (h.share_within(2.0) or 0.0)  # what the controller counts
    lin_miss = 1.0 - (h.linear_share_within(2.0) or 0.0)  # histogram_quantile's interpolation
    assert exp_miss == pytest.approx(true_miss, rel=0.1)
    assert lin_miss > 5 * true_miss  # a third of the (1, 2.5] bucket counts as missed


def test_bounds_bracket_both_estimates_and_the_empty_cases_fall_back() -> None:
    h = _hist([0.2] * 90 + [1.2] * 8 + [3.0] * 2)
    lo, hi = bucket_bounds(h, 2.0)
    assert (lo, hi) == (2.0, 10.0)
    for share in (h.linear_share_within(2.0), h.share_within(2.0)):
        assert share is not None and lo <= (1.0 - share) * h.total <= hi
    empty_bucket = _hist([0.2] * 90 + [3.0] * 10)  # nothing in (1, 2.5]: linear and exponential agree
    assert empty_bucket.share_within(2.0) == empty_bucket.linear_share_within(2.0) == pytest.approx(0.9)
    assert _hist([]).share_within(2.0) is None


def test_the_table_has_a_row_per_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["azure-conv", "--seconds", "240"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| scenario |") and len(out) == 3
    cells = [c.strip() for c in out[2].strip("|").split("|")]
    assert cells[0] == "azure-conv" and float(cells[1].replace(",", "")) > 1000
    linear, exponential = float(cells[3].rstrip("%")), float(cells[4].rstrip("%"))
    low, high = (float(x.strip().rstrip("%")) for x in cells[5].split("–"))
    assert low <= exponential and low <= linear <= high
