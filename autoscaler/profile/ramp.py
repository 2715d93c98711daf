"""Open-loop load in stages: Poisson arrivals at a fixed rate per stage, the rate chosen by `knee.next_rate`.

A stage sends requests for `warmup_seconds + measure_seconds`; only requests that arrive in the measure
window are judged (the warmup lets the replica reach steady state), and the stage ends when every request
it sent has finished or timed out, so the next stage starts on an idle replica. A stage that has already
missed more requests than the SLO's quantile allows stops at once and cancels what is in flight. Arrivals never wait for
answers (open loop); when `max_in_flight` requests are outstanding an arrival is dropped and counted as
an SLO miss rather than queued in the client. Durations and rates are in the replica's seconds:
`time_scale` replica seconds pass per client second (1 for a real server; the emulator's `--speed`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import httpx
import numpy as np

from autoscaler.profile.client import Endpoint, Result, timed_request
from autoscaler.profile.knee import Knee, RampPlan, find_knee, next_rate
from autoscaler.profile.mix import LengthMix
from autoscaler.profile.prompts import synth_prompt
from autoscaler.profile.stages import SLO, StageSummary, idle_ttft, summarise


@dataclass(frozen=True, slots=True)
class RampConfig:
    warmup_seconds: float = 30.0
    measure_seconds: float = 120.0
    max_in_flight: int = 512
    time_scale: float = 1.0
    tokens_per_word: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.warmup_seconds < 0 or self.measure_seconds <= 0:
            raise ValueError("warmup must be ≥ 0 and the measure window > 0 seconds")
        if self.max_in_flight < 1 or self.time_scale <= 0:
            raise ValueError("max in-flight must be ≥ 1 and the time scale > 0")


@dataclass(frozen=True, slots=True)
class Tick:
    """Progress within a stage, for a progress bar."""

    stage: int
    rate: float
    elapsed: float  # replica seconds since the stage began
    duration: float  # warmup + measure
    in_flight: int
    finished: int
    sending: bool


@dataclass(frozen=True, slots=True)
class Measured:
    results: list[Result]  # measured window only, times in replica seconds
    dropped: int
    in_flight_seen: list[int]
    broke_early: bool = False


def _scaled(r: Result, k: float, t0: float) -> Result:
    def s(x: float | None) -> float | None:
        return None if x is None else x * k

    return replace(r, sent_at=(r.sent_at - t0) * k, ttft=s(r.ttft), e2e=s(r.e2e), itl=s(r.itl))


class _Sent:
    """A request sent in a stage; `task` is set right after the request starts."""

    __slots__ = ("first", "measured", "sent", "task")
    task: asyncio.Task[Result]

    def __init__(self, measured: bool, sent: float) -> None:
        self.measured, self.sent = measured, sent
        self.first = False


def _missed(x: _Sent, now: float, k: float, deadline: float) -> bool:
    """Already known to miss: finished late or failed, or still without a first token past the deadline."""
    if x.task.done():
        if x.task.cancelled():
            return True
        r = x.task.result()
        return not r.ok or r.ttft is None or r.ttft * k > deadline
    return not x.first and (now - x.sent) * k > deadline


class _Flight:
    """One stage's requests: what was sent, what is still in flight, what was dropped, and whether the
    SLO is already broken."""

    def __init__(self, t0: float, k: float, budget: float, deadline: float | None) -> None:
        self.t0, self.k, self.budget, self.deadline = t0, k, budget, deadline
        self.sent: list[_Sent] = []
        self.in_flight = self.finished = self.dropped = 0
        self.seen: list[int] = []  # requests in flight at each measured arrival

    def _done(self, _: asyncio.Task[Result]) -> None:
        self.in_flight -= 1
        self.finished += 1

    def arrive(self, client: httpx.AsyncClient, ep: Endpoint, mix: LengthMix, cfg: RampConfig,
               rng: np.random.Generator, measured: bool) -> None:
        """One arrival: sent, or dropped (a miss when measured) with `max_in_flight` outstanding."""
        if measured:
            self.seen.append(self.in_flight)
        if self.in_flight >= cfg.max_in_flight:
            self.dropped += measured
            return
        p, o = mix.draw(rng)
        x = _Sent(measured, time.perf_counter())

        def first(x: _Sent = x) -> None:
            x.first = True

        x.task = asyncio.create_task(timed_request(client, ep, synth_prompt(p, rng, cfg.tokens_per_word), o,
                                                   time.perf_counter, first))
        self.in_flight += 1
        x.task.add_done_callback(self._done)
        self.sent.append(x)

    def broken(self, now: float) -> bool:
        """More measured requests already missed the deadline than the quantile allows (never without one)."""
        if self.deadline is None:
            return False
        deadline = self.deadline
        missed = sum(1 for x in self.sent if x.measured and _missed(x, now, self.k, deadline))
        return self.dropped + missed > self.budget

    async def cancel(self) -> None:
        for x in self.sent:
            x.task.cancel()
        await asyncio.gather(*(x.task for x in self.sent), return_exceptions=True)

    def measured(self, broke: bool) -> Measured:
        results = [_scaled(x.task.result(), self.k, self.t0) if not x.task.cancelled()
                   else Result((x.sent - self.t0) * self.k, False, "cancelled: the stage had already broken the SLO")
                   for x in self.sent if x.measured]
        return Measured(results, self.dropped, self.seen, broke)


async def run_stage(client: httpx.AsyncClient, ep: Endpoint, mix: LengthMix, rate: float, cfg: RampConfig,
                    rng: np.random.Generator, stage: int = 0, on_tick: Callable[[Tick], None] | None = None,
                    deadline: float | None = None, quantile: float = 1.0) -> Measured:
    """One stage at `rate`. With a `deadline` (the TTFT a request must beat, replica seconds), the stage
    stops as soon as more measured requests have missed it than `quantile` allows of the window's
    expected count, and cancels what is in flight (the server frees them): the verdict is already known."""
    k = cfg.time_scale
    duration = cfg.warmup_seconds + cfg.measure_seconds
    clock = time.perf_counter
    f = _Flight(clock(), k, (1.0 - quantile) * rate * cfg.measure_seconds, deadline)

    def tick(sending: bool) -> None:
        if on_tick is not None:
            on_tick(Tick(stage, rate, min(duration, (clock() - f.t0) * k), duration, f.in_flight, f.finished,
                         sending))

    broke = False
    t_next = float(rng.exponential(1.0 / rate))
    last_check = 0.0
    while t_next < duration and not broke:  # open loop: arrivals at their times, whatever is in flight
        wait = t_next / k - (clock() - f.t0)
        if wait > 0:
            await asyncio.sleep(wait)
        f.arrive(client, ep, mix, cfg, rng, t_next >= cfg.warmup_seconds)
        t_next += float(rng.exponential(1.0 / rate))
        if clock() - last_check > 0.1:
            last_check = clock()
            broke = f.broken(last_check)
            tick(True)
    rest = (duration - t_next) / k - (clock() - f.t0)
    if rest > 0 and not broke:
        await asyncio.sleep(rest)
    while f.in_flight > 0 and not broke:  # every request finished or timed out: the next stage starts idle
        broke = f.broken(clock())
        tick(False)
        await asyncio.sleep(0.1)
    if broke:
        await f.cancel()
    tick(False)
    return f.measured(broke)


@dataclass(frozen=True, slots=True)
class Profile:
    stages: list[StageSummary]
    knee: Knee
    idle_ttft: float

    @property
    def knee_stage(self) -> StageSummary | None:
        return next((s for s in self.stages if s.rate == self.knee.rate), None)


async def ramp(client: httpx.AsyncClient, ep: Endpoint, mix: LengthMix, slo: SLO, plan: RampPlan,
               cfg: RampConfig, on_tick: Callable[[Tick], None] | None = None,
               on_stage: Callable[[StageSummary], None] | None = None) -> Profile:
    """Stages until the knee is found (see `knee`)."""
    stages: list[StageSummary] = []
    idle = 0.0
    while (rate := next_rate(plan, [(s.rate, s.holds) for s in stages])) is not None:
        # the first stage measures the idle TTFT (queue-time SLOs need it), so it always runs to the end
        deadline = slo.deadline(idle) if stages else None
        # each stage its own stream (seed, stage): what a stage sends does not depend on where an earlier
        # stage that broke stopped drawing
        rng = np.random.default_rng([cfg.seed, len(stages)])
        m = await run_stage(client, ep, mix, rate, cfg, rng, len(stages), on_tick, deadline, slo.quantile)
        if not stages:
            idle = idle_ttft(m.results)
        s = summarise(rate, m.results, m.dropped, m.in_flight_seen, slo, idle, m.broke_early)
        stages.append(s)
        if on_stage is not None:
            on_stage(s)
    return Profile(stages, find_knee([(s.rate, s.holds) for s in stages]), idle)
