"""histogram_quantile as Prometheus computes it."""

from __future__ import annotations

import math

from autoscaler.sources.histogram import histogram_quantile

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
