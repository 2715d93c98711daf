"""`trace.start_seconds`: a later window of a recorded trace (a day the default policy was not tuned on)
is exactly that part of the trace, on its own clock, and a window that holds nothing is a one-line error."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.errors import SimulationInputError
from simulations.scenario import Scenario, build_workload, load_scenario, parse_scenario, resolve_trace_path
from simulations.trace import BinnedWorkload, Trace
from simulations.trace_loaders import load_azure_csv


def _from(sc: Scenario, **trace: object) -> Scenario:
    return sc.model_copy(update={"trace": sc.trace.model_copy(update=trace)})


def test_a_servegen_window_is_that_part_of_the_whole_run_on_a_clock_moved_as_far() -> None:
    sc = load_scenario("servegen-mid")
    whole = build_workload(sc, 3 * 3600)
    later = build_workload(_from(sc, start_seconds=2 * 3600.0), 3600)
    assert isinstance(whole, BinnedWorkload) and isinstance(later, BinnedWorkload)
    assert len(later.counts) == 3600
    np.testing.assert_array_equal(later.counts, whole.counts[2 * 3600:])
    np.testing.assert_array_equal(later.prompt_tokens, whole.prompt_tokens[2 * 3600:])
    assert later.start_epoch == whole.start_epoch + 2 * 3600


def test_an_azure_window_holds_the_requests_after_the_start_rebased_to_zero() -> None:
    sc = _from(load_scenario("azure-conv"), clone=None)
    raw = load_azure_csv(resolve_trace_path(sc.trace.path or ""))
    later = build_workload(_from(sc, start_seconds=1800.0), 600)
    assert isinstance(later, Trace)
    inside = (raw.arrival_s >= 1800) & (raw.arrival_s < 2400)
    assert len(later) == int(inside.sum()) > 0
    np.testing.assert_allclose(later.arrival_s, raw.arrival_s[inside] - 1800)
    np.testing.assert_array_equal(later.prompt_tokens, raw.prompt_tokens[inside])
    assert later.start_epoch == pytest.approx(raw.start_epoch + 1800)


@pytest.mark.parametrize("name", ["azure-code", "servegen-mid"])
def test_a_start_after_the_last_request_names_the_field_and_the_fix(name: str) -> None:
    with pytest.raises(SimulationInputError, match=r"trace\.start_seconds.*start before the trace's"):
        build_workload(_from(load_scenario(name), start_seconds=30 * 86400.0), 3600)


def test_a_generated_trace_has_no_start_to_skip() -> None:
    with pytest.raises(SimulationInputError, match="start_seconds"):
        parse_scenario({"name": "x", "trace": {"format": "flash-crowd", "start_seconds": 600}})


@pytest.mark.parametrize("bad", [-1, 400 * 86400])
def test_a_start_outside_its_bounds_is_refused(bad: float) -> None:
    with pytest.raises(SimulationInputError, match="start_seconds"):
        parse_scenario({"name": "x", "trace": {"format": "servegen", "path": "servegen/m-mid", "start_seconds": bad}})
