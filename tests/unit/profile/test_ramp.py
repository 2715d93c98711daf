"""A stage against scripted servers: open-loop arrivals at the rate asked, the in-flight bound, and the
early stop once the SLO is already broken."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import httpx
import numpy as np

from autoscaler.profile.client import Endpoint
from autoscaler.profile.mix import DistributionMix, Lengths
from autoscaler.profile.ramp import Measured, RampConfig, run_stage

MIX = DistributionMix(Lengths(10), Lengths(2))


class _Slow(httpx.AsyncByteStream):
    def __init__(self, first_after: float) -> None:
        self.first_after = first_after

    async def __aiter__(self) -> AsyncIterator[bytes]:
        await asyncio.sleep(self.first_after)
        for t in (" a", " b"):
            yield b"data: " + json.dumps({"choices": [{"text": t}]}).encode() + b"\n\n"
        yield b'data: {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}}\n\ndata: [DONE]\n\n'


def stage(first_after: float, rate: float, cfg: RampConfig, deadline: float | None) -> tuple[Measured, float]:
    async def go() -> Measured:
        transport = httpx.MockTransport(lambda req: httpx.Response(200, stream=_Slow(first_after)))
        async with httpx.AsyncClient(transport=transport) as c:
            return await run_stage(c, Endpoint("http://x", "m", timeout_seconds=30), MIX, rate, cfg,
                                   np.random.default_rng(1), deadline=deadline, quantile=0.9)

    t0 = time.monotonic()
    m = asyncio.run(go())
    return m, time.monotonic() - t0


def test_a_healthy_stage_runs_its_window_open_loop() -> None:
    m, wall = stage(0.01, 40.0, RampConfig(warmup_seconds=0.5, measure_seconds=1.5), deadline=0.5)
    assert not m.broke_early and m.dropped == 0
    assert 1.9 <= wall < 6
    assert 40 <= len(m.results) <= 85  # Poisson(60) arrivals in the measured window
    assert all(r.ok and r.ttft is not None and r.ttft < 0.5 for r in m.results)
    assert all(0.5 <= r.sent_at <= 2.3 for r in m.results)  # only the measure window (sends may lag a little)


def test_a_broken_stage_stops_early_and_cancels_its_requests() -> None:
    m, wall = stage(20.0, 50.0, RampConfig(warmup_seconds=0.0, measure_seconds=5.0), deadline=0.05)
    assert m.broke_early and wall < 2.5  # not the 5 s window, nor the 20 s answers
    assert any(r.error and r.error.startswith("cancelled") for r in m.results)


def test_the_in_flight_bound_drops_arrivals_instead_of_queueing_them() -> None:
    m, _ = stage(0.5, 60.0, RampConfig(warmup_seconds=0.0, measure_seconds=1.0, max_in_flight=5), deadline=None)
    assert m.dropped > 20 and len(m.results) <= 5 + 5  # bounded by what could be in flight over the window
