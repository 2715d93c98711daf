"""Each baseline does what its documentation says (shared/docs/autoscaler-anchors.md §(b)1–3)."""

from __future__ import annotations

from simulations.autoscalers.hpa import Hpa, HpaBehavior
from simulations.autoscalers.keda import Keda
from simulations.autoscalers.kpa import Kpa


def test_hpa_ratio_rule() -> None:
    # 4 pods averaging 20 running against a target of 10: ceil(4 × 20 / 10) = 8
    assert Hpa(10).recommend(current=4, metric_sum=80, with_metrics=4) == 8


def test_hpa_tolerance_band_is_a_noop() -> None:
    hpa = Hpa(10)
    assert hpa.recommend(4, 4 * 10.9, 4) == 4  # +9%: inside 0.1
    assert hpa.recommend(4, 4 * 9.1, 4) == 4  # −9%
    assert hpa.recommend(4, 4 * 11.5, 4) == 5  # +15%: outside


def test_hpa_pods_without_metrics_count_zero_on_scale_up_and_full_on_scale_down() -> None:
    hpa = Hpa(10)
    # 2 ready pods at 30 each, 2 starting: scale-up recompute with the starting ones at 0 → ceil(60/10) = 6
    assert hpa.recommend(current=4, metric_sum=60, with_metrics=2) == 6
    # 2 ready pods idle, 2 starting counted at 100%: ratio (0 + 20)/40 = 0.5 → 2; no scale-down below current
    # would happen only after stabilization; the recommendation itself:
    assert hpa.recommend(current=4, metric_sum=0, with_metrics=2) == 2
    # recompute falling inside the tolerance means no change
    assert hpa.recommend(current=4, metric_sum=21, with_metrics=2) == 4


def test_hpa_no_ready_pod_means_no_action() -> None:
    assert Hpa(10).recommend(current=3, metric_sum=0, with_metrics=0) == 3


def test_hpa_scale_down_waits_out_the_300s_stabilization_window() -> None:
    b = HpaBehavior()
    assert b.apply(0, current=10, recommendation=10, lo=1, hi=100) == 10
    for t in range(15, 300, 15):
        assert b.apply(t, 10, 2, 1, 100) == 10  # the max over the last 300 s is still 10
    assert b.apply(315, 10, 2, 1, 100) == 2  # 100% per 15 s: all the way down at once


def test_hpa_scale_up_limited_to_max_of_100_percent_and_4_pods_per_15s() -> None:
    b = HpaBehavior()
    assert b.apply(0, current=2, recommendation=50, lo=1, hi=100) == 6  # max(2×2, 2+4)
    assert b.apply(5, current=6, recommendation=50, lo=1, hi=100) == 6  # same period: start was 2
    assert b.apply(15, current=6, recommendation=50, lo=1, hi=100) == 12  # new period: max(12, 10)


def test_keda_average_value_divides_by_threshold_with_tolerance() -> None:
    k = Keda(5)
    assert k.recommend(current=2, value=40) == 8
    assert k.recommend(current=4, value=21) == 4  # 21 / (5 × 4) = 1.05: inside the tolerance
    assert k.recommend(current=4, value=0) == 0  # the HPA clamps this to minReplicas


def test_kpa_stable_mode_sizes_on_the_60s_average() -> None:
    kpa = Kpa(container_concurrency=10)  # target 7 per pod
    for t in range(60):
        kpa.observe(float(t), 28.0)
    assert kpa.decide(59.0, ready=4) == 4
    assert not kpa.panicking


def test_kpa_panics_at_200_percent_and_does_not_scale_down_while_panicking() -> None:
    kpa = Kpa(container_concurrency=10)
    for t in range(54):
        kpa.observe(float(t), 14.0)
    for t in range(54, 60):
        kpa.observe(float(t), 70.0)  # 6-s window: 70 / 7 = 10 pods ≥ 2 × 2 ready
    d = kpa.decide(59.0, ready=2)
    assert kpa.panicking and d == 10
    for t in range(60, 80):
        kpa.observe(float(t), 0.0)
    assert kpa.decide(79.0, ready=10) == 10  # still panicking: never decreases
    for t in range(80, 141):
        kpa.observe(float(t), 0.0)
    d = kpa.decide(140.0, ready=10)
    assert not kpa.panicking and d == 5  # panic over after a stable window; max-scale-down-rate 2


def test_kpa_scale_up_rate_and_no_data() -> None:
    kpa = Kpa(container_concurrency=10)
    assert kpa.decide(0.0, ready=1) is None  # ErrNoData: no decision
