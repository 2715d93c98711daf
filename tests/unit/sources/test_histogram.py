"""histogram_quantile as Prometheus computes it, and LatencyHistograms built from raw buckets."""

from __future__ import annotations

import math

from autoscaler.core.signals import LatencyHistogram
from autoscaler.sources.histogram import histogram_quantile, latency_histogram, parse_le, quantile_of

INF = math.inf


def test_interpolates_linearly_inside_the_bucket() -> None:
    # 10 observations: 5 in (0, 1], 5 in (1, 2]. p90 = rank 9 -> 1 + (9-5)/5 = 1.8
    assert histogram_quantile(0.9, [(1.0, 5), (2.0, 10), (INF, 10)]) == 1.8


def test_first_bucket_starts_at_zero() -> None:
    assert histogram_quantile(0.5, [(4.0, 10), (INF, 10)]) == 2.0


def test_rank_in_the_inf_bucket_answers_the_largest_finite_bound() -> None:
    assert histogram_quantile(0.9, [(1.0, 1), (7680.0, 2), (INF, 10)]) == 7680.0


def test_no_observations_is_none_not_zero() -> None:
    assert histogram_quantile(0.9, [(1.0, 0), (INF, 0)]) is None


def test_without_inf_bucket_is_none() -> None:
    assert histogram_quantile(0.9, [(1.0, 3), (2.0, 4)]) is None


def test_non_monotonic_counts_are_raised_to_the_running_max() -> None:
    assert histogram_quantile(0.5, [(1.0, 4), (2.0, 3), (INF, 8)]) == histogram_quantile(
        0.5, [(1.0, 4), (2.0, 4), (INF, 8)])


def test_order_of_buckets_does_not_matter() -> None:
    assert histogram_quantile(0.9, [(INF, 10), (2.0, 10), (1.0, 5)]) == 1.8


def test_buckets_with_equal_bounds_are_one_bucket() -> None:
    # le="1" and le="1.0" from two scrape formats: summed, as PromQL's histogram_quantile does.
    assert histogram_quantile(0.9, [(1.0, 2), (1.0, 3), (2.0, 10), (INF, 10)]) == 1.8


def test_follows_promql_arithmetic_to_the_last_bit() -> None:
    # bucketStart + (bucketEnd - bucketStart) * (rank / count), rank and count relative to the bucket.
    buckets = [(0.3, 7.3), (0.5, 11.1), (0.8, 19.7), (INF, 21.3)]
    rank = 0.9 * 21.3 - 11.1
    assert histogram_quantile(0.9, buckets) == 0.5 + (0.8 - 0.5) * (rank / (19.7 - 11.1))


def test_latency_histogram_is_sorted_cumulative_and_ends_at_inf() -> None:
    h = latency_histogram([(INF, 10), (0.5, 4), (1.0, 7)], age_seconds=3.0)
    assert h == LatencyHistogram((0.5, 1.0, INF), (4.0, 7.0, 10.0), 3.0)
    assert h.total == 10 and h.share_within(1.0) == 0.7


def test_latency_histogram_without_inf_bucket_is_none_because_the_total_is_unknown() -> None:
    assert latency_histogram([(0.5, 4), (1.0, 7)], 0.0) is None
    assert latency_histogram([], 0.0) is None


def test_latency_histogram_refuses_nan_or_negative_counts() -> None:
    assert latency_histogram([(1.0, math.nan), (INF, 3)], 0.0) is None
    assert latency_histogram([(1.0, -1), (INF, 3)], 0.0) is None


def test_latency_histogram_of_an_empty_window_is_an_honest_zero() -> None:
    h = latency_histogram([(1.0, 0), (INF, 0)], 0.0)
    assert h is not None and h.total == 0 and h.share_within(1.0) is None


def test_latency_histogram_counts_never_decrease_with_the_bound() -> None:
    h = latency_histogram([(1.0, 4.2), (2.0, 3.9), (INF, 8)], 0.0)
    assert h is not None and h.cumulative_counts == (4.2, 4.2, 8.0)


def test_quantile_of_a_latency_histogram() -> None:
    h = latency_histogram([(1.0, 5), (2.0, 10), (INF, 10)], 0.0)
    assert h is not None and quantile_of(0.9, h) == 1.8


def test_le_labels_parse_including_inf() -> None:
    assert parse_le("+Inf") == INF and parse_le("0.25") == 0.25 and parse_le("1e3") == 1000.0
    assert parse_le(None) is None and parse_le("fast") is None and parse_le("NaN") is None
