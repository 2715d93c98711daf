"""Warm capacity in the decision core: the pool's size (stages/warm.py) and the lead time of a replica that
lands on a warm slot (coldstart.lead_time)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.core import CoreState, Signals, decide, forecast_config
from autoscaler.core.coldstart import PRESTAGED_WEIGHT_LOAD_SHARE, ColdStartStats, lead_time, stage_estimate
from autoscaler.core.signals import ClusterFacts, ReplicaCounts, StageObservation
from autoscaler.core.stages.warm import BURST_QUANTILE, warm
from autoscaler.policy import PolicySpec
from forecasting import ForecastConfig, ForecastState, from_history, predict
from tests.unit.core.helpers import policy, signals

WARM = {"enabled": True, "minSlots": 0, "maxSlots": 4}
FORECAST = {"enabled": True, "stepSeconds": 60, "historySeconds": 86400, "method": "holt"}


def _noisy_history(level: float, noise: float, n: int = 600, seed: int = 1) -> np.ndarray:
    return level + np.random.default_rng(seed).normal(0.0, noise, n).clip(-level, None)


def _forecast(pol: PolicySpec, values: np.ndarray) -> tuple[ForecastConfig, ForecastState]:
    cfg = forecast_config(pol)
    return cfg, from_history(cfg, values, 0.0)


def test_disabled_keeps_no_placeholders_and_adds_nothing_to_the_explanation() -> None:
    pol = policy(forecast=FORECAST)
    r = decide(pol, signals(work=5.0, desired=5), CoreState(), 1000.0)
    assert r.decision.warm_slots == 0
    assert "warm_slots" not in r.decision.components


def test_without_a_forecast_the_pool_is_min_slots() -> None:
    pol = policy(warmCapacity={**WARM, "minSlots": 1})
    r = decide(pol, signals(work=5.0, desired=5), CoreState(), 1000.0)
    assert r.decision.warm_slots == 1
    assert r.decision.components["warm_slots"] == 1


def test_the_pool_covers_the_burst_band_over_one_cold_start_beyond_the_fleet() -> None:
    pol = policy(forecast=FORECAST, warmCapacity={**WARM, "maxSlots": 50})
    cfg, fc = _forecast(pol, _noisy_history(10.0, 2.0))
    stats, cluster = ColdStartStats(), ClusterFacts()
    horizon = lead_time(pol.cold_start, stats, cluster).high_seconds
    burst = predict(cfg, fc, horizon, (BURST_QUANTILE,)).quantiles[BURST_QUANTILE]
    assert burst > 11.0  # the band is above the level: there is a rise to cover
    usable = 1.0
    for fleet in (5, 10, 11):
        w = warm(pol, cfg, fc, 10.0, usable, stats, cluster, fleet)
        assert w.slots == max(0, int(np.ceil(burst / usable - 1e-9)) - fleet)
        assert w.horizon_seconds == horizon
    # A fleet that already covers the burst needs no placeholder; a wider band needs more.
    assert warm(pol, cfg, fc, 10.0, usable, stats, cluster, 40).slots == 0
    cfg2, wider = _forecast(pol, _noisy_history(10.0, 5.0))
    assert warm(pol, cfg2, wider, 10.0, usable, stats, cluster, 10).slots > warm(
        pol, cfg, fc, 10.0, usable, stats, cluster, 10).slots


def test_the_pool_is_sized_on_the_cold_path_so_running_placeholders_do_not_shrink_it() -> None:
    # Sized with the warm (short) lead time, placeholders would shorten the horizon, shrink the pool, and the
    # pool would flap. The warm stage always looks one cold start ahead.
    pol = policy(forecast={**FORECAST, "method": "holt"}, warmCapacity={**WARM, "maxSlots": 50})
    rising = np.linspace(2.0, 30.0, 600) + _noisy_history(0.0 + 1.0, 1.0) - 1.0
    cfg, fc = _forecast(pol, rising)
    without = warm(pol, cfg, fc, 30.0, 1.0, ColdStartStats(), ClusterFacts(warm_slots=0), 30)
    with_slots = warm(pol, cfg, fc, 30.0, 1.0, ColdStartStats(), ClusterFacts(warm_slots=3), 30)
    assert without == with_slots
    assert without.slots > 0


def test_the_pool_stays_within_its_bounds_and_what_replicas_max_lets_a_replica_use() -> None:
    pol = policy(forecast=FORECAST, warmCapacity={"enabled": True, "minSlots": 1, "maxSlots": 3},
                 replicas={"min": 1, "max": 12})
    cfg, fc = _forecast(pol, _noisy_history(10.0, 4.0))
    stats, cluster = ColdStartStats(), ClusterFacts()
    assert warm(pol, cfg, fc, 10.0, 1.0, stats, cluster, 2).slots == 3  # maxSlots
    assert warm(pol, cfg, fc, 10.0, 1.0, stats, cluster, 11).slots == 1  # one replica left to max
    assert warm(pol, cfg, fc, 10.0, 1.0, stats, cluster, 12).slots == 1  # at max: minSlots still kept


def test_an_untrusted_tick_never_shrinks_the_pool_below_what_runs() -> None:
    pol = policy(forecast=FORECAST, warmCapacity=WARM)
    cfg, fc = _forecast(pol, _noisy_history(10.0, 0.5))
    cluster = ClusterFacts(warm_slots=3)
    assert warm(pol, cfg, fc, 10.0, 1.0, ColdStartStats(), cluster, 30).slots == 0
    assert warm(pol, cfg, fc, 10.0, 1.0, ColdStartStats(), cluster, 30, trusted=False).slots == 3


def test_missing_demand_holds_the_running_placeholders() -> None:
    pol = policy(warmCapacity={**WARM, "minSlots": 1})
    sig = Signals(replicas=ReplicaCounts(desired=4, ready=4), cluster=ClusterFacts(warm_slots=2))
    d = decide(pol, sig, CoreState(), 1000.0).decision
    assert d.warm_slots == 2 and d.components["warm_slots"] == 2
    none_running = Signals(replicas=ReplicaCounts(desired=4, ready=4))
    assert decide(pol, none_running, CoreState(), 1000.0).decision.warm_slots == 1


def test_decide_sizes_the_pool_from_its_own_forecast() -> None:
    pol = policy(forecast={**FORECAST, "stepSeconds": 60}, warmCapacity={**WARM, "maxSlots": 20})
    state, t = CoreState(), 0.0
    rng = np.random.default_rng(3)
    for _ in range(300):  # five hours of noisy demand around 8 replicas
        work = float(max(0.0, 8.0 + rng.normal(0.0, 2.0)))
        r = decide(pol, signals(work=work, desired=8), state, t)
        state, t = r.state, t + 60.0
    d = r.decision
    assert d.components["warm_horizon_s"] >= d.lead_time_seconds
    assert d.forecast_work is not None
    assert d.components["warm_burst_work"] >= d.forecast_work  # a higher quantile over a longer horizon
    assert 0 < d.warm_slots <= 20


@settings(max_examples=150, deadline=None)
@given(
    level=st.floats(0.0, 200.0), noise=st.floats(0.0, 50.0), offered=st.floats(0.0, 1e4),
    usable=st.floats(0.0, 10.0), fleet=st.integers(0, 500), lo=st.integers(0, 5), extra=st.integers(0, 10),
    running=st.none() | st.integers(0, 20), trusted=st.booleans(), enabled=st.booleans(),
)
def test_pool_size_properties(level: float, noise: float, offered: float, usable: float, fleet: int, lo: int,
                              extra: int, running: int | None, trusted: bool, enabled: bool) -> None:
    pol = policy(forecast=FORECAST, warmCapacity={"enabled": enabled, "minSlots": lo, "maxSlots": lo + extra})
    cfg, fc = _forecast(pol, _noisy_history(level + 1e-3, noise, n=60))
    w = warm(pol, cfg, fc, offered, usable, ColdStartStats(), ClusterFacts(warm_slots=running), fleet, trusted)
    if not enabled:
        assert w.slots == 0
        return
    assert lo <= w.slots <= lo + extra
    more = warm(pol, cfg, fc, offered, usable, ColdStartStats(), ClusterFacts(warm_slots=running), fleet + 1,
                trusted)
    assert more.slots <= w.slots  # a bigger fleet never needs more placeholders
    if not trusted and running is not None:
        assert w.slots >= min(lo + extra, running)


# -- lead time on a warm slot -------------------------------------------------------------------------


def test_a_warm_slot_skips_node_provisioning_and_image_pull() -> None:
    spec = policy(coldStart={"imagePullSeconds": 300}).cold_start
    cold = lead_time(spec, ColdStartStats(), ClusterFacts())
    warm_lead = lead_time(spec, ColdStartStats(), ClusterFacts(warm_slots=1))
    assert dict(cold.stages).keys() == {"node_provisioning", "image_pull", "weight_load", "warmup"}
    stages = dict(warm_lead.stages)
    assert "node_provisioning" not in stages
    assert stages == {"scheduling": 2.0, "image_pull": 0.0, "weight_load": 20.0, "warmup": 60.0}
    assert warm_lead.median_seconds == cold.median_seconds - 100.0 - 300.0 + 2.0
    # Fewer warm slots than replicas needed (or none, or unknown): the cold path.
    assert lead_time(spec, ColdStartStats(), ClusterFacts(warm_slots=1), replicas_needed=2) == cold
    assert lead_time(spec, ColdStartStats(), ClusterFacts(warm_slots=0)) == cold


def test_pre_staged_weights_leave_only_the_local_load() -> None:
    spec = policy().cold_start
    lt = lead_time(spec, ColdStartStats(), ClusterFacts(warm_slots=2), weights_prestaged=True)
    assert dict(lt.stages)["weight_load"] == round(20.0 * PRESTAGED_WEIGHT_LOAD_SHARE, 3)
    # Not pre-staged: the weights are still downloaded on the warm node.
    assert dict(lead_time(spec, ColdStartStats(), ClusterFacts(warm_slots=2)).stages)["weight_load"] == 20.0


def test_stage_durations_are_learned_per_situation() -> None:
    spec = policy(coldStart={"learn": True}).cold_start
    stats = ColdStartStats().observe(
        tuple(StageObservation("warmup", 90.0) for _ in range(10))
        + tuple(StageObservation("weight_load", 4.0, "warm") for _ in range(10))
        + tuple(StageObservation("weight_load", 50.0) for _ in range(10))
        + tuple(StageObservation("scheduling", 7.0, "warm") for _ in range(10))
    )
    warm_stages = dict(lead_time(spec, stats, ClusterFacts(warm_slots=1), weights_prestaged=True).stages)
    cold_stages = dict(lead_time(spec, stats, ClusterFacts()).stages)
    # Warm samples are kept apart from cold ones...
    assert warm_stages["weight_load"] < 10.0 < cold_stages["weight_load"]
    assert warm_stages["scheduling"] > stage_estimate(spec, stats, "scheduling").median_seconds
    # ... and a stage no warm sample exists for uses what cold starts taught (warmup does not depend on caches).
    assert warm_stages["warmup"] == cold_stages["warmup"] > 60.0


@settings(max_examples=150, deadline=None)
@given(
    sched=st.floats(0.0, 600.0), node=st.floats(0.0, 3600.0), pull=st.floats(0.0, 3600.0),
    load=st.floats(0.0, 3600.0), warmup=st.floats(0.0, 3600.0), free=st.none() | st.integers(0, 8),
    cached=st.none() | st.booleans(), slots=st.integers(1, 8), prestaged=st.booleans(),
)
def test_a_warm_slot_never_plans_a_slower_start_than_the_cold_path(
        sched: float, node: float, pull: float, load: float, warmup: float, free: int | None,
        cached: bool | None, slots: int, prestaged: bool) -> None:
    spec = policy(coldStart={"schedulingSeconds": sched, "nodeProvisioningSeconds": max(node, sched),
                             "imagePullSeconds": pull, "weightLoadSeconds": load, "warmupSeconds": warmup}).cold_start
    cold = lead_time(spec, ColdStartStats(), ClusterFacts(free_replica_slots=free, image_cached=cached))
    warm_lead = lead_time(spec, ColdStartStats(), ClusterFacts(free_replica_slots=free, image_cached=cached,
                                                              warm_slots=slots), weights_prestaged=prestaged)
    assert warm_lead.median_seconds <= cold.median_seconds + 1e-9
    assert warm_lead.high_seconds <= cold.high_seconds + 1e-9
    assert "node_provisioning" not in dict(warm_lead.stages)


def test_decide_plans_with_the_warm_lead_time_and_pre_staged_weights() -> None:
    pol = policy(warmCapacity={**WARM, "weightsCachePath": "/var/cache/models"})
    cold = decide(pol, signals(work=5.0, desired=5), CoreState(), 1000.0).decision
    warm_sig = replace(signals(work=5.0, desired=5), cluster=ClusterFacts(warm_slots=1))
    warm_d = decide(pol, warm_sig, CoreState(), 1000.0).decision
    spec = pol.cold_start
    prestaged = lead_time(spec, ColdStartStats(), ClusterFacts(warm_slots=1), weights_prestaged=True)
    assert warm_d.lead_time_seconds == prestaged.high_seconds < cold.lead_time_seconds
