"""Small workloads built in the tests, so the suite needs no shared traces."""

from __future__ import annotations

import numpy as np
import pytest

from simulations.profiles import ServingProfile
from simulations.trace import Trace


def poisson_trace(rate: float, seconds: float, seed: int = 0, prompt: int = 1000, output: int = 200,
                  vary: bool = True) -> Trace:
    rng = np.random.default_rng(seed)
    n = rng.poisson(rate * seconds)
    t = np.sort(rng.uniform(0, seconds, n))
    if vary:
        p = rng.integers(prompt // 2, prompt * 3 // 2 + 1, n)
        o = rng.integers(max(1, output // 2), output * 3 // 2 + 1, n)
    else:
        p, o = np.full(n, prompt), np.full(n, output)
    return Trace("poisson", t, p.astype(np.int64), o.astype(np.int64), 1704067200.0)


@pytest.fixture
def serving() -> ServingProfile:
    return ServingProfile()
