"""The baselines do what their source code does (file and function cited in each module and in
docs/baselines.md): kubernetes `pkg/controller/podautoscaler`, kedacore/keda, knative/serving
`pkg/autoscaler/scaling/autoscaler.go`. Start-up behaviour is pinned here."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from autoscaler.core import ReplicaCounts, StartingReplica
from simulations.autoscalers.base import Context
from simulations.autoscalers.hpa import (
    Hpa,
    HpaBehavior,
    PodGroups,
    ScalingPolicy,
    group_pods,
    parse_policy,
    plain_metric_replicas,
)
from simulations.autoscalers.keda import Keda
from simulations.autoscalers.kpa import Kpa, MaxTimeWindow
from simulations.metrics_view import MetricsView
from simulations.sample import FleetSample


# ---- a scale target and a metrics view the tests drive by hand ---------------------------------------
@dataclass
class FakeFleet:
    target: int
    ready: int
    starting: tuple[StartingReplica, ...] = ()
    terminating: int = 0
    in_flight: float = 0.0
    lifecycle: object = None
    writes: list[tuple[float, int]] = field(default_factory=list)

    @property
    def ready_replicas(self) -> int:
        return self.ready

    def replica_counts(self, t: float) -> ReplicaCounts:
        return ReplicaCounts(desired=self.target, ready=self.ready, starting=self.starting,
                             terminating=self.terminating)


def _sample(t: float, running: float = 0.0, waiting: float = 0.0, reporting: int = 1,
            finished: float = 0.0) -> FleetSample:
    return FleetSample(time=t, prompt_tokens=0.0, generation_tokens=0.0, request_success=finished,
                       queue_time_counts=(0.0,), ttft_counts=(0.0,), running=running, waiting=waiting,
                       kv_cache_usage=0.0, reporting_replicas=reporting)


def _drive(policy: Hpa | Keda, fleet: FakeFleet, until: float, per_pod_running: float = 0.0,
           waiting: float = 0.0, start: float = 15.0, rate: float = 1.0,
           view: MetricsView | None = None) -> list[tuple[float, int]]:
    """Scrape every 15 s and sync the policy, applying what it writes; returns (time, replicas) writes."""
    view = view or MetricsView()
    ctx = Context(view, fleet, 0.0, 1, 60)  # type: ignore[arg-type]
    t = start - 15.0
    while t <= until:
        view.record(_sample(t, running=per_pod_running * fleet.ready, waiting=waiting, reporting=fleet.ready,
                            finished=rate * min(t, 300.0)))
        if t >= start:
            d = policy.tick(t, ctx)
            if d is not None and d != fleet.target:
                fleet.writes.append((t, d))
                fleet.target = fleet.ready = d
        t += 15.0
    return fleet.writes


def _loading(n: int) -> tuple[StartingReplica, ...]:
    return tuple(StartingReplica("weight_load", 150.0, 10.0) for _ in range(n))


def _pending(n: int) -> tuple[StartingReplica, ...]:
    return tuple(StartingReplica("node_provisioning", 30.0, 30.0) for _ in range(n))


# ---- HPA: replica_calculator.go ----------------------------------------------------------------------
def test_hpa_ratio_rule_and_tolerance_band() -> None:
    pods = PodGroups(ready=4, missing=0, unready=0, ignored=0)
    assert plain_metric_replicas(4, 20, 10, pods) == 8  # ceil(20 / 10 × 4)
    assert plain_metric_replicas(4, 11.0, 10, pods) == 4  # +10%: isWithin is inclusive
    assert plain_metric_replicas(4, 9.0, 10, pods) == 4  # −10%
    assert plain_metric_replicas(4, 11.5, 10, pods) == 5  # ceil(1.15 × 4)


def test_group_pods_follows_pod_phases() -> None:
    counts = ReplicaCounts(desired=7, ready=3, starting=(*_pending(2), *_loading(1)), terminating=1)
    g = group_pods(counts, sampled=2)  # one ready pod became ready after the last scrape
    assert (g.ready, g.missing, g.unready, g.ignored) == (2, 2, 2, 1)
    assert g.status_replicas == 6


def test_hpa_missing_pods_count_zero_on_scale_up_and_target_on_scale_down() -> None:
    two_missing = PodGroups(ready=2, missing=2, unready=0, ignored=0)
    assert plain_metric_replicas(4, 30, 10, two_missing) == 6  # (60 + 0) / (4 × 10) = 1.5 → 6
    assert plain_metric_replicas(4, 0, 10, two_missing) == 2  # (0 + 2 × 10) / 40 = 0.5 → 2
    assert plain_metric_replicas(4, 10.5, 10, two_missing) == 4  # already inside the tolerance: no change
    # the recompute flips direction: 2 pods at 12 (up) become (24 + 0) / 40 = 0.6 (down) → no change
    assert plain_metric_replicas(4, 12, 10, two_missing) == 4


def test_hpa_pending_pods_count_only_on_scale_up() -> None:
    two_pending = PodGroups(ready=2, missing=0, unready=2, ignored=0)
    assert plain_metric_replicas(4, 30, 10, two_pending) == 6  # unready at 0 on a scale-up: 60 / 40 → 6
    assert plain_metric_replicas(4, 2, 10, two_pending) == 1  # scale-down: left out, ceil(0.2 × 2) = 1


def test_hpa_without_any_sample_takes_no_action() -> None:
    assert plain_metric_replicas(3, 5, 10, PodGroups(ready=0, missing=3, unready=0, ignored=0)) is None


def test_fresh_hpa_cannot_scale_down_for_its_stabilization_window() -> None:
    """recordInitialRecommendation: the first sync (t = 15 s) records the 8 replicas it found."""
    writes = _drive(Hpa(32), FakeFleet(target=8, ready=8), until=600, per_pod_running=1.0)
    assert writes[0][0] == 315.0  # the seed at 15 s leaves the 300-s window only after 315 s
    assert writes[0][1] == 1


@pytest.mark.parametrize("window", [600.0, 900.0])
def test_hpa_scale_down_window_is_a_setting(window: float) -> None:
    writes = _drive(Hpa(32, down_window_seconds=window), FakeFleet(target=8, ready=8), until=1200,
                    per_pod_running=1.0)
    assert writes[0] == (15.0 + window, 1)


def test_hpa_min_replicas_setting_is_the_floor() -> None:
    writes = _drive(Hpa(32, min_replicas=3), FakeFleet(target=8, ready=8), until=600, per_pod_running=1.0)
    assert writes == [(315.0, 3)]


def test_hpa_scales_up_at_once_and_waits_the_window_to_come_down() -> None:
    fleet = FakeFleet(target=2, ready=2)
    writes = _drive(Hpa(10), fleet, until=30, per_pod_running=40.0)
    assert writes == [(15.0, 6), (30.0, 12)]  # max(100%, 4 pods) per 15 s: 2 → 6 → 12


def test_hpa_rate_limits_use_the_period_start_and_truncate_percent_on_scale_down() -> None:
    b = HpaBehavior()
    assert b.apply(0, current=2, recommendation=50, lo=1, hi=100) == 6  # max(2 × 2, 2 + 4)
    assert b.apply(5, current=6, recommendation=50, lo=1, hi=100) == 6  # same period: start was 2
    assert b.apply(15, current=6, recommendation=50, lo=1, hi=100) == 12  # new period: max(12, 10)
    half = HpaBehavior(down_window_seconds=0, down_policies=(ScalingPolicy("Percent", 50, 60),))
    assert half.apply(0, current=5, recommendation=1, lo=1, hi=100) == 2  # int(5 × 0.5) = 2, not 3
    assert half.apply(30, current=2, recommendation=1, lo=1, hi=100) == 2  # the period started at 5: 2 left


def test_hpa_scale_down_policy_is_a_setting() -> None:
    hpa = Hpa(32, down_policies=parse_policy("1pod/60s"))
    writes = _drive(hpa, FakeFleet(target=4, ready=4), until=600, per_pod_running=1.0)
    assert writes == [(315.0, 3), (375.0, 2), (435.0, 1)]  # one pod per 60-s period once the window passed
    with pytest.raises(ValueError, match="write e"):
        parse_policy("fast")


def test_hpa_with_zero_replicas_is_disabled() -> None:
    assert _drive(Hpa(10), FakeFleet(target=0, ready=0), until=60, per_pod_running=5.0) == []


# ---- KEDA: the generated HPA and the operator --------------------------------------------------------
def test_keda_average_value_divides_by_threshold_with_tolerance() -> None:
    k = Keda(5)
    assert k.recommend(current=2, value=40, status_replicas=2) == 8
    assert k.recommend(current=4, value=21, status_replicas=4) == 4  # 21 / (5 × 4) = 1.05
    assert k.recommend(current=4, value=0, status_replicas=4) == 0  # the HPA clamps this to minReplicas


def test_keda_queue_time_value_metric_scales_the_ready_count() -> None:
    k = Keda(0.5, signal="queue_p90")
    assert k.metric_type == "Value"
    assert k.recommend(current=6, value=1.5, ready=4) == 12  # ceil(3 × 4 ready)
    assert k.recommend(current=6, value=0.52, ready=4) == 6  # inside the tolerance


def test_fresh_keda_hpa_cannot_scale_down_for_its_stabilization_window() -> None:
    fleet = FakeFleet(target=8, ready=8, in_flight=10)
    writes = _drive(Keda(5), fleet, until=600, waiting=0.0)
    assert writes == [(315.0, 1)]


def test_keda_scales_to_zero_only_with_min_zero_and_after_the_cooldown() -> None:
    idle = FakeFleet(target=2, ready=2, in_flight=0)
    # nothing arrives and LastActiveTime is nil: initialCooldownPeriod (0) has passed at the first poll
    assert _drive(Keda(5, min_replicas=0), idle, until=60, rate=0.0) == [(15.0, 0)]
    fleet = FakeFleet(target=2, ready=2, in_flight=5)
    keda, view = Keda(5, min_replicas=0, cooldown_seconds=300), MetricsView()
    assert _drive(keda, fleet, until=300, view=view) == []  # requests arrive (keepalive trigger): active
    assert keda.last_active == 300.0
    fleet.in_flight = 0  # from 300 s nothing arrives (the counter stops at 300 s)
    writes = _drive(keda, fleet, until=900, view=view, start=375.0)
    # the generated HPA (minReplicas 1) drops to 1 once its seeded window has passed; the operator takes
    # it to 0 at the first poll more than cooldownPeriod after the last active one
    assert writes == [(375.0, 1), (615.0, 0)]
    fleet.in_flight = 3  # a request arrives at the router: back to max(minReplicaCount, 1)
    assert _drive(keda, fleet, until=930, view=view, start=930.0)[-1] == (930.0, 1)


def test_keda_with_min_one_never_deactivates() -> None:
    fleet = FakeFleet(target=2, ready=2, in_flight=0)
    writes = _drive(Keda(5, min_replicas=1), fleet, until=1200)
    assert all(r >= 1 for _, r in writes)


# ---- KPA: autoscaler.go ------------------------------------------------------------------------------
def _feed(kpa: Kpa, t0: int, t1: int, concurrency: float) -> None:
    for t in range(t0, t1):
        kpa.observe(float(t), concurrency)


def test_new_kpa_with_more_than_one_ready_pod_starts_in_panic_and_holds_the_count() -> None:
    kpa = Kpa(10)  # target 7 per pod
    kpa.start(0.0, ready=8)
    assert kpa.panicking and kpa.max_panic_pods == 8
    _feed(kpa, 0, 60, 7.0)  # one pod's worth of load
    assert kpa.decide(30.0, ready=8) == 8  # newAutoscaler: keep the current scale while in panic
    assert kpa.decide(60.0, ready=8) == 8  # panicTime + stable window (60 s) is not yet before now
    _feed(kpa, 60, 62, 7.0)
    assert kpa.decide(61.0, ready=8) == 4 and not kpa.panicking  # stable: floor(8 / 2) by max-scale-down-rate


def test_new_kpa_with_one_ready_pod_starts_stable() -> None:
    kpa = Kpa(10)
    kpa.start(0.0, ready=1)
    assert not kpa.panicking and kpa.max_panic_pods == 1


def test_kpa_stable_mode_sizes_on_the_60s_average() -> None:
    kpa = Kpa(10)
    kpa.start(0.0, ready=1)
    _feed(kpa, 0, 60, 28.0)
    assert kpa.decide(59.0, ready=4) == 4
    assert not kpa.panicking


def test_kpa_panics_on_the_raw_panic_pod_count_not_the_clamped_one() -> None:
    kpa = Kpa(10, max_scale_up_rate=1.5)
    kpa.start(0.0, ready=1)
    _feed(kpa, 0, 54, 14.0)
    _feed(kpa, 54, 60, 35.0)  # panic window: ceil(35 / 7) = 5 pods, 5 / 2 ready ≥ 200%
    d = kpa.decide(59.0, ready=2)
    assert kpa.panicking  # the clamped count, ceil(1.5 × 2) = 3, would be only 150%
    assert d == 3


def test_kpa_does_not_scale_down_while_panicking() -> None:
    kpa = Kpa(10)
    kpa.start(0.0, ready=1)
    _feed(kpa, 0, 54, 14.0)
    _feed(kpa, 54, 60, 70.0)
    assert kpa.decide(59.0, ready=2) == 10 and kpa.panicking
    _feed(kpa, 60, 80, 0.0)
    assert kpa.decide(79.0, ready=10) == 10
    _feed(kpa, 80, 141, 0.0)
    assert kpa.decide(140.0, ready=10) == 5 and not kpa.panicking


def test_kpa_scale_down_delay_holds_the_maximum_of_the_window() -> None:
    kpa = Kpa(10, scale_down_delay_seconds=300)
    kpa.start(0.0, ready=1)
    _feed(kpa, 0, 60, 28.0)
    assert kpa.decide(59.0, ready=4) == 4
    _feed(kpa, 60, 200, 0.0)
    assert kpa.decide(199.0, ready=4) == 4  # stable wants 2 (max-scale-down-rate), delayed
    _feed(kpa, 200, 362, 0.0)
    assert kpa.decide(361.0, ready=4) == 2  # 300 s after the last 4


def test_max_time_window_keeps_the_maximum_for_its_duration() -> None:
    w = MaxTimeWindow(10.0, 2.0)
    w.record(0.0, 5)
    w.record(4.0, 3)
    assert w.current() == 5
    w.record(10.0, 1)
    assert w.current() == 3  # 5 was recorded 5 buckets ago
    w.record(12.0, 4)
    assert w.current() == 4


def test_kpa_without_data_makes_no_decision() -> None:
    assert Kpa(10).decide(0.0, ready=1) is None
