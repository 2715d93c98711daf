"""Small workloads built in the tests, so the suite needs no shared traces."""

from __future__ import annotations

from pathlib import Path

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


# A 10-minute slice of the bundled Azure code trace, request-level and warm: a scenario a bench job replays in
# about a second.
TINY = """name: tiny
trace: {format: azure, path: "bundled:azure_code_slice.csv", limit_seconds: 600}
fidelity: request
cold_start: warm
initial_replicas: 2
quick_limit_seconds: 600
"""


@pytest.fixture
def tiny(tmp_path: Path) -> str:
    """The path of the tiny scenario, written into the test's own folder."""
    p = tmp_path / "tiny.yaml"
    p.write_text(TINY)
    return str(p)
