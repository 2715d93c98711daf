"""The gated-step queue law (`simulations.step_queue`) against a single replica's step loop: arrivals wait
for the step in flight, each step prefills FCFS what waits, up to the token budget."""

from __future__ import annotations

from collections import deque
from itertools import pairwise

import numpy as np
import pytest

from simulations.step_queue import GatedStep

CP = 1.0 / 15_000  # s per prompt token
S0 = 0.012  # a step's fixed part: base + the decodes beside the prefill
BUDGET = 8192
# Azure-conv-like prompts: mostly short, one in five ~4k tokens
PROMPTS = np.array([300.0, 800.0, 1500.0, 4000.0])
SHARES = np.array([0.35, 0.3, 0.15, 0.2])


def _law(rate: float) -> GatedStep:
    capped = np.minimum(PROMPTS, BUDGET)
    return GatedStep(rate, S0, CP * float(SHARES @ capped), CP * CP * float(SHARES @ (capped * capped)),
                     S0 + BUDGET * CP)


def _step_loop(rate: float, n: int = 30_000, seed: int = 1) -> np.ndarray:
    """Queue times (arrival to first scheduled) of one replica running vLLM's step loop."""
    rng = np.random.default_rng(seed)
    arrive = np.cumsum(rng.exponential(1.0 / rate, n))
    prompt = rng.choice(PROMPTS, n, p=SHARES)
    waits = np.full(n, np.nan)
    queue: deque[list[float]] = deque()  # [index, prompt tokens left]
    t, i = 0.0, 0
    while i < n or queue:
        while i < n and arrive[i] <= t:
            queue.append([i, prompt[i]])
            i += 1
        if not queue:
            t = arrive[i]
            continue
        room, tokens = float(BUDGET), 0.0
        for r in queue:
            if room <= 0:
                break
            k = int(r[0])
            if np.isnan(waits[k]):
                waits[k] = t - arrive[k]
            c = min(room, r[1])
            r[1] -= c
            room -= c
            tokens += c
        while queue and queue[0][1] <= 0:
            queue.popleft()
        t += S0 + CP * tokens
    return waits


@pytest.mark.parametrize("rho", [0.3, 0.5])
def test_residual_step_law_follows_the_step_loop(rho: float) -> None:
    law = _law(1.0)
    rate = rho / (law.rho / 1.0)
    law = _law(rate)
    waits = _step_loop(rate)
    assert law.mean == pytest.approx(float(np.mean(waits)), rel=0.12)
    # the two-moment exponential tail: within a factor 2 of the loop's at 0.1-0.3 s (measured: ρ 0.3:
    # 0.127/0.132, 0.047/0.059, 0.017/0.0085; ρ 0.5: 0.246/0.256, 0.109/0.135, 0.046/0.047)
    for x in (0.1, 0.2, 0.3):
        sim = float(np.mean(waits > x))
        assert 0.5 * sim <= law.tail(x) <= 2.0 * sim, (x, law.tail(x), sim)


def test_the_step_feedback_is_what_makes_the_tail() -> None:
    """Without the feedback from a long step to the next (Var[C] without the 1/(1 − ρ²)), the law would
    under-state the loop's tail at ρ = 0.5 by more than it errs with it."""
    rate = 0.5 / _law(1.0).rho
    law = _law(rate)
    waits = _step_loop(rate)
    sim = float(np.mean(waits > 0.3))
    capped = np.minimum(PROMPTS, BUDGET)
    m2 = CP * CP * float(SHARES @ (capped * capped))
    no_feedback = GatedStep(rate, S0, law.rho / rate, m2 * (1.0 - law.rho ** 2), S0 + BUDGET * CP)
    assert abs(law.tail(0.3) - sim) < abs(no_feedback.tail(0.3) - sim)


def test_law_shape() -> None:
    law = _law(5.0)
    assert law.tail(0.0) == 1.0
    assert law.tail(S0 - 1e-9) == pytest.approx(law.tail(S0 + 1e-9), abs=1e-6)  # continuous at s0
    assert law.tail(S0 + BUDGET * CP) == 0.0  # no step is longer than the full budget
    xs = np.linspace(0.0, 0.7, 50)
    assert all(law.tail(a) >= law.tail(b) for a, b in pairwise(xs))
    assert _law(2.0).mean < _law(5.0).mean < _law(8.0).mean
    assert _law(0.0).mean == pytest.approx(S0 / 2)
    with pytest.raises(ValueError, match="s0"):
        GatedStep(1.0, 0.0, 0.01, 0.001, 0.5)
    with pytest.raises(ValueError, match="rate"):
        GatedStep(-1.0, 0.01, 0.01, 0.001, 0.5)
