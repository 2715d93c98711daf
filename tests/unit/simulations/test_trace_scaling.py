"""Scaling: cloning keeps the burst shape; rate scaling multiplies the rate."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.errors import SimulationInputError
from simulations.trace import Trace

from .conftest import poisson_trace


def _bursty() -> Trace:
    t = np.concatenate([np.full(50, 10.0), np.arange(20.0, 80.0, 2.0), np.full(40, 90.0)])
    n = len(t)
    return Trace("b", t, np.full(n, 100, dtype=np.int64), np.full(n, 10, dtype=np.int64), 0.0)


def test_clone_multiplies_every_second_by_k_and_keeps_the_shape() -> None:
    tr = _bursty()
    k = 4
    c = tr.clone(k, seed=1)
    assert len(c) == k * len(tr)
    before = np.bincount(tr.arrival_s.astype(int), minlength=100)[:100]
    after = np.bincount(c.arrival_s.astype(int), minlength=100)[:100]
    assert np.array_equal(after, k * before)


def test_clone_jitter_is_at_most_100ms_and_sorted() -> None:
    tr = _bursty()
    c = tr.clone(3, seed=2)
    assert np.all(np.diff(c.arrival_s) >= 0)
    # every clone sits within 100 ms after an original timestamp
    originals = np.unique(tr.arrival_s)
    idx = np.searchsorted(originals, c.arrival_s, side="right") - 1
    assert np.all(c.arrival_s - originals[idx] <= 0.1 + 1e-12)


def test_fractional_clone_keeps_the_expected_count() -> None:
    tr = poisson_trace(50, 200, seed=1)
    c = tr.clone(2.5, seed=3)
    assert len(c) == pytest.approx(2.5 * len(tr), rel=0.03)


def test_rate_factor_scales_binned_workload() -> None:
    wl = poisson_trace(10, 100).binned(1.0)
    s = wl.scaled(0.5)
    assert s.total_requests == pytest.approx(0.5 * wl.total_requests)
    assert s.prompt_tokens.sum() == pytest.approx(0.5 * wl.prompt_tokens.sum())


@pytest.mark.parametrize("k", [0, -1])
def test_bad_scale_is_an_error(k: float) -> None:
    with pytest.raises(SimulationInputError, match="scale"):
        _bursty().clone(k)
