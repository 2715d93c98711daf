"""Request-level fleet: discrete events, one simulated vLLM engine per replica.

This module is the simulated fleet's public, incremental API (the emulator serves it as /metrics):

    fleet = RequestFleet(trace, serving, cold_start, cluster, initial_replicas=2, seed=1)
    fleet.advance(t)                 # process every event up to time t (seconds from the trace start)
    fleet.set_target(n, t)           # the scale target's spec.replicas = n, from time t
    fleet.ready_replicas             # replicas serving now
    fleet.replica_counts(t)          # ReplicaCounts for the decision core (desired, ready, starting, ...)
    fleet.cluster_facts(t)           # free GPU slots, image cached
    fleet.take_observations(t)       # cold-start stages completed since the last call
    fleet.replica_snapshots(t)       # per replica: gauges, counters, histograms (vLLM names and buckets)
    fleet.scrape(t)                  # fleet totals, as one Prometheus scrape would hold them
    fleet.outcome(slo)               # per-request TTFT etc. after the run

Time only moves forward: `advance` and `set_target` with an earlier time than the last raise ValueError.

**Serving model** (per replica, vLLM-like continuous batching, profile in `simulations.profiles`):
- A request is routed on arrival to the serving replica with the fewest outstanding requests (join the
  shortest queue). With no replica serving, it waits at the gateway and goes to the first that is ready.
- It waits (`vllm:num_requests_waiting`) until the replica has a sequence slot (`max_num_seqs`) and KV
  room for prompt + output tokens (reserved at admission, so there are no preemptions: the preemption
  counter stays 0). Queue time = admission − arrival.
- Admitted requests are prefilled one at a time at `prefill_tokens_per_second`; decode pauses while a
  prefill runs (prefill has priority, as in vLLM without chunked prefill). TTFT = queue wait + prefill.
- Decoding sequences each get one token per step; a step takes `ITL = a + b·batch`. A replica keeps a
  virtual token clock, so only completions are events, not every step.

**Scale-down** removes replicas that are still starting first (newest first, as a ReplicaSet does), then
the ready replica with the fewest outstanding requests. That replica stops taking requests; its waiting
(not yet admitted) requests are re-queued to the other replicas, its running requests finish (drain), and
it is gone when empty. GPU time counts until then.

**Histograms** are observed when vLLM observes them: TTFT at the first token; queue time and e2e latency
when the request finishes; inter-token latency for every decode step (aggregated per step length).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from autoscaler.core import ClusterFacts, ReplicaCounts, StageObservation
from simulations.histograms import (
    ITL_BUCKETS,
    REQUEST_LATENCY_BUCKETS,
    TTFT_BUCKETS,
    Histogram,
    HistogramSnapshot,
)
from simulations.lifecycle import Lifecycle, ReplicaLife
from simulations.outcome import Outcome, outcome_from_requests
from simulations.profiles import ClusterSpec, ColdStartProfile, ServingProfile
from simulations.sample import FleetSample
from simulations.trace import Trace

STARTING, READY, DRAINING, GONE = "starting", "ready", "draining", "gone"
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class ReplicaSnapshot:
    """One replica as its /metrics endpoint would show it (vLLM metric names in comments)."""

    replica_id: int
    phase: str  # ready | draining
    running: int  # vllm:num_requests_running
    waiting: int  # vllm:num_requests_waiting
    kv_cache_usage: float  # vllm:kv_cache_usage_perc (0..1)
    prompt_tokens: float  # vllm:prompt_tokens_total
    generation_tokens: float  # vllm:generation_tokens_total
    request_success: int  # vllm:request_success_total
    preemptions: int  # vllm:num_preemptions_total
    queue_time: HistogramSnapshot  # vllm:request_queue_time_seconds
    ttft: HistogramSnapshot  # vllm:time_to_first_token_seconds
    e2e_latency: HistogramSnapshot  # vllm:e2e_request_latency_seconds
    inter_token_latency: HistogramSnapshot  # vllm:inter_token_latency_seconds


class _Replica:
    __slots__ = (
        "dec", "e2e_h", "gen", "itl_carry", "itl_h", "kv_used", "last_t", "life", "load", "pf", "pf_end", "phase",
        "prompt", "queue_h", "success", "ttft_h", "v", "version", "waiting",
    )

    def __init__(self, life: ReplicaLife, phase: str):
        self.life = life
        self.phase = phase
        self.waiting: deque[int] = deque()
        self.pf: deque[int] = deque()  # admitted, awaiting or under prefill (head)
        self.pf_end: float | None = None
        self.dec: list[tuple[float, int]] = []  # (virtual token time of completion, request)
        self.v = 0.0
        self.last_t = 0.0
        self.kv_used = 0
        self.load = 0  # outstanding requests (waiting + admitted)
        self.version = 0
        self.prompt = 0.0
        self.gen = 0.0
        self.success = 0
        self.itl_carry = 0.0
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)
        self.e2e_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.itl_h = Histogram(ITL_BUCKETS)


_by_load = attrgetter("load")


class RequestFleet:
    def __init__(
        self,
        trace: Trace,
        serving: ServingProfile,
        cold_start: ColdStartProfile,
        cluster: ClusterSpec | None = None,
        initial_replicas: int = 1,
        seed: int = 0,
        per_replica_histograms: bool = True,
    ):
        self.trace = trace
        self.serving = serving
        self.lifecycle = Lifecycle(cold_start, cluster or ClusterSpec(), serving.gpus_per_replica, seed)
        self._arr: list[float] = trace.arrival_s.tolist()
        self._prompt: list[int] = trace.prompt_tokens.tolist()
        self._out: list[int] = trace.output_tokens.tolist()
        n = len(self._arr)
        self.ttft = np.full(n, np.nan)
        self.queue_time = np.full(n, np.nan)
        self._qt: list[float] = [math.nan] * n
        self._ttft: list[float] = [math.nan] * n
        self._next = 0
        self.now = 0.0
        self._heap: list[tuple[float, int, int, object, int]] = []  # (t, seq, kind, obj, version)
        self._seq = 0
        self._serving: list[_Replica] = []
        self._starting: list[_Replica] = []
        self._draining: list[_Replica] = []
        self._gateway: deque[int] = deque()
        self.target = initial_replicas
        self.in_flight = 0  # outstanding requests fleet-wide, gateway included (what KPA counts)
        self._detail = per_replica_histograms
        self._itl_a = serving.itl_base_seconds
        self._itl_b = serving.itl_per_sequence_seconds
        self._prefill_rate = serving.prefill_tokens_per_second
        # fleet totals (gone replicas included)
        self.prompt_total = 0.0
        self.gen_total = 0.0
        self.success_total = 0
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)
        self.scale_events = 0
        for _ in range(initial_replicas):
            self._serving.append(_Replica(self.lifecycle.add_ready(0.0), READY))

    # ---- public API ---------------------------------------------------------------------------------
    @property
    def ready_replicas(self) -> int:
        return len(self._serving)

    def advance(self, t_end: float) -> None:
        if t_end < self.now - _EPS:
            raise ValueError(f"time goes forward only: advance({t_end}) after {self.now}")
        arr, heap = self._arr, self._heap
        n = len(arr)
        i = self._next
        while True:
            t_arr = arr[i] if i < n else math.inf
            t_ev = heap[0][0] if heap else math.inf
            if t_arr <= t_ev:
                if t_arr > t_end:
                    break
                self._arrive(i, t_arr)
                i += 1
            else:
                if t_ev > t_end:
                    break
                t, _, kind, obj, version = heapq.heappop(heap)
                if kind == 0:
                    rep: _Replica = obj  # type: ignore[assignment]
                    if version == rep.version and rep.phase != GONE:
                        self._replica_event(rep, t)
                else:
                    self._became_ready(obj, t)  # type: ignore[arg-type]
        self._next = i
        self.now = max(self.now, t_end)

    def set_target(self, replicas: int, t: float) -> None:
        if replicas < 0:
            raise ValueError("replicas must be ≥ 0")
        self.advance(t)
        if replicas != self.target:
            self.scale_events += 1
        self.target = replicas
        active = len(self._serving) + len(self._starting)
        while active < replicas:
            life = self.lifecycle.request(t)
            rep = _Replica(life, STARTING)
            self._starting.append(rep)
            if math.isfinite(life.ready_at):
                self._push(life.ready_at, 1, rep, 0)
            active += 1
        while active > replicas:
            if self._starting:
                rep = self._starting.pop()  # newest first
                rep.phase = GONE
                self.lifecycle.cancel(rep.life, t)
            else:
                rep = min(self._serving, key=_by_load)
                self._serving.remove(rep)
                self._drain(rep, t)
            active -= 1
        self._placed_late()

    def replica_counts(self, t: float) -> ReplicaCounts:
        return ReplicaCounts(
            desired=self.target,
            ready=len(self._serving),
            starting=self.lifecycle.starting_view([r.life for r in self._starting], t),
            terminating=len(self._draining),
        )

    def cluster_facts(self, t: float) -> ClusterFacts:
        return self.lifecycle.cluster_facts(t)

    def take_observations(self, t: float) -> tuple[StageObservation, ...]:
        return self.lifecycle.take_observations(t)

    def gpu_seconds(self, t: float | None = None) -> float:
        return self.lifecycle.gpu_seconds(self.now if t is None else t)

    def replica_snapshots(self, t: float) -> list[ReplicaSnapshot]:
        """Replicas that serve /metrics now (ready and draining), brought up to time t."""
        self.advance(t)
        out = []
        for rep in (*self._serving, *self._draining):
            self._sync(rep, t)
            running = len(rep.pf) + len(rep.dec)
            out.append(ReplicaSnapshot(
                replica_id=rep.life.rid, phase=rep.phase, running=running, waiting=len(rep.waiting),
                kv_cache_usage=min(1.0, rep.kv_used / self.serving.kv_cache_tokens),
                prompt_tokens=rep.prompt, generation_tokens=rep.gen, request_success=rep.success, preemptions=0,
                queue_time=rep.queue_h.snapshot(), ttft=rep.ttft_h.snapshot(), e2e_latency=rep.e2e_h.snapshot(),
                inter_token_latency=rep.itl_h.snapshot(),
            ))
        return out

    def scrape(self, t: float) -> FleetSample:
        self.advance(t)
        running = waiting = 0
        kv = 0.0
        reporting = (*self._serving, *self._draining)
        for rep in reporting:
            self._sync(rep, t)
            running += len(rep.pf) + len(rep.dec)
            waiting += len(rep.waiting)
            kv += rep.kv_used
        n = len(reporting)
        return FleetSample(
            time=t, prompt_tokens=self.prompt_total, generation_tokens=self.gen_total,
            request_success=float(self.success_total), queue_time_counts=tuple(self.queue_h.counts),
            ttft_counts=tuple(self.ttft_h.counts), running=float(running), waiting=float(waiting),
            kv_cache_usage=kv / (n * self.serving.kv_cache_tokens) if n else 0.0, reporting_replicas=n,
        )

    def outcome(self, slo_ttft_seconds: float) -> Outcome:
        self.ttft[:] = self._ttft
        self.queue_time[:] = self._qt
        return outcome_from_requests(self.ttft, self.queue_time, slo_ttft_seconds, self.gpu_seconds(),
                                     self.scale_events)

    def missed_arrival_times(self, slo_ttft_seconds: float) -> np.ndarray:
        ttft = np.asarray(self._ttft)
        return np.asarray(self.trace.arrival_s[~(ttft <= slo_ttft_seconds)])

    # ---- internals --------------------------------------------------------------------------------
    def _push(self, t: float, kind: int, obj: object, version: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, obj, version))

    def _placed_late(self) -> None:
        placed = self.lifecycle.newly_placed
        if placed:
            by_life = {id(r.life): r for r in self._starting}
            for life in placed:
                rep = by_life.get(id(life))
                if rep is not None:
                    self._push(life.ready_at, 1, rep, 0)
            placed.clear()

    def _became_ready(self, rep: _Replica, t: float) -> None:
        if rep.phase != STARTING:
            return  # cancelled while starting
        self._starting.remove(rep)
        rep.phase = READY
        rep.last_t = t
        self._serving.append(rep)
        gateway = self._gateway
        while gateway:
            self._route(gateway.popleft(), t)

    def _drain(self, rep: _Replica, t: float) -> None:
        self._sync(rep, t)
        rep.phase = DRAINING
        requeue = list(rep.waiting)
        rep.waiting.clear()
        rep.load -= len(requeue)
        for i in requeue:
            self._route(i, t)
        if rep.pf or rep.dec:
            self._draining.append(rep)
        else:
            self._gone(rep, t)

    def _gone(self, rep: _Replica, t: float) -> None:
        rep.phase = GONE
        rep.version += 1
        if rep in self._draining:
            self._draining.remove(rep)
        self.lifecycle.gone(rep.life, t)
        self._placed_late()

    def _arrive(self, i: int, t: float) -> None:
        self.in_flight += 1
        self._route(i, t)

    def _route(self, i: int, t: float) -> None:
        if not self._serving:
            self._gateway.append(i)
            return
        rep = min(self._serving, key=_by_load)
        rep.load += 1
        rep.waiting.append(i)
        if len(rep.pf) + len(rep.dec) < self.serving.max_num_seqs:
            self._sync(rep, t)
            if self._admit(rep, t):
                self._schedule(rep, t)

    def _sync(self, rep: _Replica, t: float) -> None:
        """Bring the replica's decode progress up to t (decode runs only while no prefill runs)."""
        dt = t - rep.last_t
        if dt > 0 and rep.dec and not rep.pf:
            b = len(rep.dec)
            itl = self._itl_a + self._itl_b * b
            dv = dt / itl
            rep.v += dv
            tokens = dv * b
            rep.gen += tokens
            self.gen_total += tokens
            if self._detail:
                carry = rep.itl_carry + tokens
                whole = int(carry)
                if whole:
                    rep.itl_h.observe(itl, whole)
                rep.itl_carry = carry - whole
        rep.last_t = t

    def _admit(self, rep: _Replica, t: float) -> bool:
        """Admit waiting requests while slots and KV room last. True if any was admitted."""
        s = self.serving
        waiting, pf = rep.waiting, rep.pf
        admitted = False
        prompt, out, arr = self._prompt, self._out, self._arr
        while waiting and len(pf) + len(rep.dec) < s.max_num_seqs:
            i = waiting[0]
            need = prompt[i] + out[i]
            if rep.kv_used + need > s.kv_cache_tokens and (pf or rep.dec):
                break
            waiting.popleft()
            rep.kv_used += need
            self._qt[i] = t - arr[i]
            pf.append(i)
            admitted = True
        return admitted

    def _schedule(self, rep: _Replica, t: float) -> None:
        version = rep.version = rep.version + 1
        if rep.pf:
            if rep.pf_end is None:
                rep.pf_end = t + self._prompt[rep.pf[0]] / self._prefill_rate
            at = rep.pf_end
        elif rep.dec:
            dec = rep.dec
            left = dec[0][0] - rep.v
            at = t + (left if left > 0 else 0.0) * (self._itl_a + self._itl_b * len(dec))
        else:
            return
        self._seq += 1
        heapq.heappush(self._heap, (at, self._seq, 0, rep, version))

    def _replica_event(self, rep: _Replica, t: float) -> None:
        self._sync(rep, t)
        if rep.pf:
            if rep.pf_end is not None and rep.pf_end <= t + _EPS:
                i = rep.pf.popleft()
                rep.pf_end = None
                ttft = t - self._arr[i]
                self._ttft[i] = ttft
                p = self._prompt[i]
                rep.prompt += p
                rep.gen += 1
                self.prompt_total += p
                self.gen_total += 1
                self.ttft_h.observe(ttft)
                if self._detail:
                    rep.ttft_h.observe(ttft)
                if self._out[i] <= 1:
                    self._finish(rep, i, t)
                else:
                    heapq.heappush(rep.dec, (rep.v + self._out[i] - 1, i))
        else:
            dec = rep.dec
            while dec and dec[0][0] <= rep.v + 1e-6:
                _, i = heapq.heappop(dec)
                self._finish(rep, i, t)
        if rep.waiting:
            self._admit(rep, t)
        if rep.phase == DRAINING and not rep.pf and not rep.dec:
            self._gone(rep, t)
            return
        self._schedule(rep, t)

    def _finish(self, rep: _Replica, i: int, t: float) -> None:
        rep.kv_used -= self._prompt[i] + self._out[i]
        rep.load -= 1
        rep.success += 1
        self.in_flight -= 1
        self.success_total += 1
        qt = self._qt[i]
        self.queue_h.observe(qt)
        if self._detail:
            rep.queue_h.observe(qt)
            rep.e2e_h.observe(t - self._arr[i])
