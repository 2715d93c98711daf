"""Every policy family declares its searchable main knob and its swept secondary knobs the same way."""

from __future__ import annotations

import pytest

from autoscaler.policy_loader import load_policy_file
from simulations.autoscalers.hpa import Hpa
from simulations.autoscalers.keda import Keda
from simulations.autoscalers.kpa import Kpa
from simulations.autoscalers.oracle import Oracle
from simulations.autoscalers.ours import Ours
from simulations.autoscalers.registry import FAMILIES, make_baseline, parse_baselines, setting_label
from simulations.errors import SimulationInputError
from simulations.scenario import Scenario, TraceSpec, bundled_path

from .conftest import poisson_trace


def test_every_family_has_a_bounded_main_knob_with_a_direction() -> None:
    assert set(FAMILIES) == {"static", "hpa", "keda", "kpa", "ours", "oracle"}
    for fam in FAMILIES.values():
        for knob in (fam.main, *fam.main_by_signal.values()):
            assert knob.lo < knob.hi and knob.lo <= knob.default <= knob.hi
            assert knob.direction in ("cheaper_up", "costlier_up")
    assert FAMILIES["static"].main.integer and FAMILIES["static"].main.direction == "costlier_up"
    assert FAMILIES["oracle"].main.direction == "costlier_up"
    assert all(FAMILIES[f].main.direction == "cheaper_up" for f in ("hpa", "keda", "kpa", "ours"))


def test_the_cold_start_knobs_an_operator_tunes_are_sweepable() -> None:
    knobs = {f: {k.name: k.candidates for k in fam.knobs} for f, fam in FAMILIES.items()}
    assert knobs["hpa"]["down_window"] == (300.0, 600.0, 900.0)
    assert knobs["keda"]["down_window"] == (300.0, 600.0, 900.0)
    assert knobs["hpa"]["down_policy"][0] == "100%/15s" == knobs["keda"]["down_policy"][0]  # the default
    assert 0 in knobs["keda"]["min_replicas"] and len(knobs["keda"]["cooldown"]) > 1
    assert 0.0 in knobs["kpa"]["scale_down_delay"] and 600.0 in knobs["kpa"]["scale_down_delay"]
    assert set(knobs["hpa"]["signal"]) == {"running", "waiting", "queue_p90"}
    assert set(knobs["keda"]["signal"]) == {"waiting", "queue_p90"}
    for f in ("hpa", "keda", "kpa"):
        assert "min_replicas" in knobs[f]


def test_settings_reach_the_autoscaler_and_the_label() -> None:
    hpa = FAMILIES["hpa"].make(0.5, {"signal": "queue_p90", "down_window": 900.0, "min_replicas": 2})
    assert isinstance(hpa, Hpa) and hpa.signal == "queue_p90" and hpa.behavior.down_window == 900.0
    assert hpa.min_replicas == 2
    assert setting_label("hpa", 0.5, {"signal": "queue_p90", "down_window": 900.0}) == \
        "target=0.5 signal=queue_p90 down_window=900"
    keda = FAMILIES["keda"].make(5, {"min_replicas": 0, "cooldown": 600.0})
    assert isinstance(keda, Keda) and keda.min_replicas == 0 and keda.cooldown == 600.0
    assert setting_label("keda", 5) == "threshold=5 signal=waiting"
    kpa = FAMILIES["kpa"].make(32, {"scale_down_delay": 600.0, "window": 180.0})
    assert isinstance(kpa, Kpa) and kpa.delay is not None and kpa.stable_window == 180.0
    assert setting_label("kpa", 32, {"scale_down_delay": 600.0}) == "target=32 scale_down_delay=600"


def test_bounds_depend_on_the_signal_and_bad_settings_are_errors() -> None:
    assert FAMILIES["hpa"].main_for({"signal": "queue_p90"}).hi <= 60  # seconds, not requests
    with pytest.raises(ValueError, match="within"):
        FAMILIES["hpa"].make(100, {"signal": "queue_p90"})
    with pytest.raises(ValueError, match="no setting"):
        FAMILIES["kpa"].make(32, {"cooldown": 300.0})
    with pytest.raises(ValueError, match="whole number"):
        FAMILIES["static"].make(2.5)
    with pytest.raises(SimulationInputError, match="unknown baseline"):
        make_baseline("oracle", 1.0)


def test_ours_and_the_oracle_are_built_from_their_knob() -> None:
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    ours = FAMILIES["ours"].make(0.6, policy=policy)
    assert isinstance(ours, Ours) and ours.policy.capacity.target_utilization == 0.6
    sc = Scenario(name="t", trace=TraceSpec(format="flash-crowd"))
    wl = poisson_trace(20, 300)
    low, high = (FAMILIES["oracle"].make(h, scenario=sc, workload=wl) for h in (0.5, 2.0))
    assert isinstance(low, Oracle) and isinstance(high, Oracle)
    assert high.need.sum() > low.need.sum()  # more headroom, more replicas
    with pytest.raises(ValueError, match="scenario"):
        FAMILIES["oracle"].make(1.0)


def test_ours_floor_is_the_policy_file_s_own_unless_set_and_bounded_like_the_field() -> None:
    policy = load_policy_file(bundled_path("default-policy.yaml"))[0].spec
    assert policy.replicas.min == 1
    shipped = FAMILIES["ours"].make(0.75, policy=policy)
    floored = FAMILIES["ours"].make(0.75, {"min_replicas": 12}, policy=policy)
    assert isinstance(shipped, Ours) and isinstance(floored, Ours)
    assert shipped.policy.replicas.min == 1 and floored.policy.replicas.min == 12
    assert floored.policy.replicas.floor_schedule == policy.replicas.floor_schedule  # only the minimum moves
    assert floored.initial_replicas(4) == 12  # the fleet starts at its floor, like every family's
    assert setting_label("ours", 0.75) == "target_utilization=0.75"
    assert setting_label("ours", 0.75, {"min_replicas": 12}) == "target_utilization=0.75 min_replicas=12"
    with pytest.raises(ValueError, match=r"replicas\.min must be within 0\.\.60"):
        FAMILIES["ours"].make(0.75, {"min_replicas": 61}, policy=policy)


def test_command_line_syntax_is_kept() -> None:
    assert parse_baselines("hpa,keda:10,oracle") == [("hpa", 32), ("keda", 10.0), ("oracle", None)]
    with pytest.raises(SimulationInputError, match="not a number"):
        parse_baselines("keda:abc")
