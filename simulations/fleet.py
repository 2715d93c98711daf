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
from bisect import bisect_left
from collections import deque
from dataclasses import dataclass

import numpy as np

from autoscaler.core import ReplicaCounts
from simulations.histograms import (
    ITL_BUCKETS,
    REQUEST_LATENCY_BUCKETS,
    TTFT_BUCKETS,
    Histogram,
    HistogramSnapshot,
)
from simulations.lifecycle import Lifecycle, LifecycleFacts, ReplicaLife
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
        "dec", "due", "e2e_h", "gen", "itl_carry", "itl_h", "kv_used", "last_t", "life", "pf", "pf_end", "phase",
        "prompt", "queue_h", "slot", "success", "ttft_h", "v", "waiting",
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
        self.slot = -1  # index in the fleet's serving list (and its outstanding-request counts), -1 if not serving
        self.due = 0  # seq of the heap entry that is its next event (older entries are stale), 0 if none
        self.prompt = 0.0
        self.gen = 0.0
        self.success = 0
        self.itl_carry = 0.0
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)
        self.e2e_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.itl_h = Histogram(ITL_BUCKETS)


class RequestFleet(LifecycleFacts):
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
        # (t, seq, replica): the replica's next event if seq == replica.due; for a starting replica, it is
        # ready; else stale (superseded by a later schedule, or the replica is gone)
        self._heap: list[tuple[float, int, _Replica]] = []
        self._seq = 0
        self._serving: list[_Replica] = []
        self._loads: list[int] = []  # outstanding requests (waiting + admitted) of each serving replica
        self._starting: list[_Replica] = []
        self._draining: list[_Replica] = []
        self._gateway: deque[int] = deque()
        self.target = initial_replicas
        self._detail = per_replica_histograms
        self._itl_a = serving.itl_base_seconds
        self._itl_b = serving.itl_per_sequence_seconds
        self._prefill_rate = serving.prefill_tokens_per_second
        self._max_seqs = serving.max_num_seqs
        self._kv_cap = serving.kv_cache_tokens
        # fleet totals (gone replicas included)
        self.prompt_total = 0.0
        self.gen_total = 0.0
        self.success_total = 0
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)
        self.scale_events = 0
        for _ in range(initial_replicas):
            self._add_serving(_Replica(self.lifecycle.add_ready(0.0), READY))

    # ---- public API ---------------------------------------------------------------------------------
    @property
    def ready_replicas(self) -> int:
        return len(self._serving)

    @property
    def in_flight(self) -> int:
        """Outstanding requests fleet-wide, gateway included (what KPA counts): arrived and not finished."""
        return self._next - self.success_total

    def advance(self, t_end: float) -> None:
        if t_end < self.now - _EPS:
            raise ValueError(f"time goes forward only: advance({t_end}) after {self.now}")
        # The hot loop: arrivals (route, sync, admit, schedule) and replica events (prefill end, decode
        # completions, admit, schedule) are inlined on local variables, with the arithmetic in the same order
        # and at the same moments as the helper methods below, which serve the rare paths (scale-up/down,
        # scrapes, the gateway). Counters live in locals and are written back (`_store`) before any call that
        # reads or changes them. tests/unit/simulations/test_fleet_speed_pin.py pins the results.
        arr, heap = self._arr, self._heap
        prompt, out, qt_l, ttft_l = self._prompt, self._out, self._qt, self._ttft
        serving, loads, gateway = self._serving, self._loads, self._gateway
        max_seqs, kv_cap = self._max_seqs, self._kv_cap
        itl_a, itl_b, rate, detail = self._itl_a, self._itl_b, self._prefill_rate, self._detail
        heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
        qh, th = self.queue_h, self.ttft_h
        q_counts, q_bounds, t_counts, t_bounds = qh.counts, qh.bounds, th.counts, th.bounds
        q_sum, q_count, t_sum, t_count = qh.sum, qh.count, th.sum, th.count
        seq = self._seq
        gen_total, prompt_total, success_total = self.gen_total, self.prompt_total, self.success_total
        inf = math.inf
        n = len(arr)
        i = self._next
        t_arr = arr[i] if i < n else inf
        while True:
            t_ev = heap[0][0] if heap else inf
            if t_arr <= t_ev:
                # ---- an arrival (arrivals go first at equal times) ----
                if t_arr > t_end:
                    break
                t = t_arr
                if not serving:
                    gateway.append(i)
                else:
                    # join the shortest queue (the first of equals, in serving order)
                    k = loads.index(min(loads))
                    loads[k] += 1
                    rep = serving[k]
                    pf, dec = rep.pf, rep.dec
                    waiting = rep.waiting
                    if len(pf) + len(dec) < max_seqs:
                        # sync: decode progress up to t (none while a prefill runs)
                        if pf:
                            prefilling = True
                        else:
                            prefilling = False
                            if dec:
                                dt = t - rep.last_t
                                if dt > 0:
                                    b = len(dec)
                                    itl = itl_a + itl_b * b
                                    dv = dt / itl
                                    rep.v += dv
                                    tokens = dv * b
                                    rep.gen += tokens
                                    gen_total += tokens
                                    if detail:
                                        carry = rep.itl_carry + tokens
                                        whole = int(carry)
                                        if whole:
                                            rep.itl_h.observe(itl, whole)
                                        rep.itl_carry = carry - whole
                        rep.last_t = t
                        # admit
                        kv_used = rep.kv_used
                        if waiting:  # behind requests that wait for KV room
                            waiting.append(i)
                            admitted = False
                            while waiting and len(pf) + len(dec) < max_seqs:
                                j = waiting[0]
                                need = prompt[j] + out[j]
                                if kv_used + need > kv_cap and (pf or dec):
                                    break
                                waiting.popleft()
                                kv_used += need
                                qt_l[j] = t - arr[j]
                                pf.append(j)
                                admitted = True
                            rep.kv_used = kv_used
                        else:
                            need = prompt[i] + out[i]
                            if kv_used + need > kv_cap and (pf or dec):
                                waiting.append(i)
                                admitted = False
                            else:
                                rep.kv_used = kv_used + need
                                qt_l[i] = 0.0  # t - arr[i]
                                pf.append(i)
                                admitted = True
                        # schedule: a prefill under way ends when it would have (its event stays valid);
                        # otherwise the new head of the prefill queue starts now
                        if admitted and not prefilling:
                            at = rep.pf_end = t + prompt[pf[0]] / rate
                            seq += 1
                            rep.due = seq
                            heappush(heap, (at, seq, rep))
                    else:
                        waiting.append(i)
                i += 1
                t_arr = arr[i] if i < n else inf
                continue

            # ---- a replica event ----
            if t_ev > t_end:
                break
            # The entry stays on the heap while the event is handled (nothing else touches the heap meanwhile)
            # and is replaced by the replica's next event in one sift: the same order as pop, then push.
            t, s, rep = heap[0]
            if s != rep.due:
                heappop(heap)
                if rep.phase == STARTING:
                    self._store(i, seq, gen_total, prompt_total, success_total, q_sum, q_count, t_sum, t_count)
                    self._became_ready(rep, t)
                    seq, gen_total = self._seq, self.gen_total
                continue  # else stale
            pf, dec = rep.pf, rep.dec
            # sync
            if dec and not pf:
                dt = t - rep.last_t
                if dt > 0:
                    b = len(dec)
                    itl = itl_a + itl_b * b
                    dv = dt / itl
                    rep.v += dv
                    tokens = dv * b
                    rep.gen += tokens
                    gen_total += tokens
                    if detail:
                        carry = rep.itl_carry + tokens
                        whole = int(carry)
                        if whole:
                            rep.itl_h.observe(itl, whole)
                        rep.itl_carry = carry - whole
            rep.last_t = t
            if pf:
                pf_end = rep.pf_end
                if pf_end is not None and pf_end <= t + _EPS:
                    # prefill done: the first token
                    j = pf.popleft()
                    rep.pf_end = None
                    ttft = t - arr[j]
                    ttft_l[j] = ttft
                    p = prompt[j]
                    rep.prompt += p
                    rep.gen += 1
                    prompt_total += p
                    gen_total += 1
                    t_counts[bisect_left(t_bounds, ttft)] += 1
                    t_sum += ttft
                    t_count += 1
                    if detail:
                        rep.ttft_h.observe(ttft)
                    if out[j] > 1:
                        heappush(dec, (rep.v + out[j] - 1, j))
                    else:  # finished at the first token
                        rep.kv_used -= p + out[j]
                        slot = rep.slot
                        if slot >= 0:
                            loads[slot] -= 1
                        rep.success += 1
                        success_total += 1
                        qt = qt_l[j]
                        q_counts[bisect_left(q_bounds, qt)] += 1
                        q_sum += qt
                        q_count += 1
                        if detail:
                            rep.queue_h.observe(qt)
                            rep.e2e_h.observe(t - arr[j])
            else:
                v_done = rep.v + 1e-6
                slot = rep.slot
                while dec and dec[0][0] <= v_done:
                    j = heappop(dec)[1]
                    # finish
                    rep.kv_used -= prompt[j] + out[j]
                    if slot >= 0:
                        loads[slot] -= 1
                    rep.success += 1
                    success_total += 1
                    qt = qt_l[j]
                    q_counts[bisect_left(q_bounds, qt)] += 1
                    q_sum += qt
                    q_count += 1
                    if detail:
                        rep.queue_h.observe(qt)
                        rep.e2e_h.observe(t - arr[j])
            waiting = rep.waiting
            if waiting:
                # admit
                kv_used = rep.kv_used
                while waiting and len(pf) + len(dec) < max_seqs:
                    j = waiting[0]
                    need = prompt[j] + out[j]
                    if kv_used + need > kv_cap and (pf or dec):
                        break
                    waiting.popleft()
                    kv_used += need
                    qt_l[j] = t - arr[j]
                    pf.append(j)
                rep.kv_used = kv_used
            # schedule
            if pf:
                pf_end = rep.pf_end
                if pf_end is None:
                    pf_end = rep.pf_end = t + prompt[pf[0]] / rate
                at = pf_end
            elif dec:
                left = dec[0][0] - rep.v
                at = t + (left if left > 0 else 0.0) * (itl_a + itl_b * len(dec))
            else:
                heappop(heap)
                if rep.phase == DRAINING:
                    self._store(i, seq, gen_total, prompt_total, success_total, q_sum, q_count, t_sum, t_count)
                    self._gone(rep, t)
                    seq = self._seq
                continue
            seq += 1
            rep.due = seq
            heapreplace(heap, (at, seq, rep))
        self._store(i, seq, gen_total, prompt_total, success_total, q_sum, q_count, t_sum, t_count)
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
                self._push_ready(life.ready_at, rep)
            active += 1
        while active > replicas:
            if self._starting:
                rep = self._starting.pop()  # newest first
                rep.phase = GONE
                self.lifecycle.cancel(rep.life, t)
            else:
                loads = self._loads
                rep = self._remove_serving(loads.index(min(loads)))  # the least loaded (first of equals)
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
    def _store(self, i: int, seq: int, gen_total: float, prompt_total: float, success_total: int, q_sum: float,
               q_count: int, t_sum: float, t_count: int) -> None:
        """Write back what `advance` keeps in locals."""
        self._next, self._seq = i, seq
        self.gen_total, self.prompt_total, self.success_total = gen_total, prompt_total, success_total
        qh, th = self.queue_h, self.ttft_h
        qh.sum, qh.count, th.sum, th.count = q_sum, q_count, t_sum, t_count

    def _push_ready(self, t: float, rep: _Replica) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, rep))

    def _add_serving(self, rep: _Replica) -> None:
        rep.slot = len(self._serving)
        self._serving.append(rep)
        self._loads.append(0)

    def _remove_serving(self, k: int) -> _Replica:
        rep = self._serving.pop(k)
        del self._loads[k]
        rep.slot = -1
        for slot in range(k, len(self._serving)):
            self._serving[slot].slot = slot
        return rep

    def _placed_late(self) -> None:
        placed = self.lifecycle.newly_placed
        if placed:
            by_life = {id(r.life): r for r in self._starting}
            for life in placed:
                rep = by_life.get(id(life))
                if rep is not None:
                    self._push_ready(life.ready_at, rep)
            placed.clear()

    def _became_ready(self, rep: _Replica, t: float) -> None:
        if rep.phase != STARTING:
            return  # cancelled while starting
        self._starting.remove(rep)
        rep.phase = READY
        rep.last_t = t
        self._add_serving(rep)
        gateway = self._gateway
        while gateway:
            self._route(gateway.popleft(), t)

    def _drain(self, rep: _Replica, t: float) -> None:
        self._sync(rep, t)
        rep.phase = DRAINING
        requeue = list(rep.waiting)
        rep.waiting.clear()
        for i in requeue:
            self._route(i, t)
        if rep.pf or rep.dec:
            self._draining.append(rep)
        else:
            self._gone(rep, t)

    def _gone(self, rep: _Replica, t: float) -> None:
        rep.phase = GONE
        rep.due = 0
        if rep in self._draining:
            self._draining.remove(rep)
        self.lifecycle.gone(rep.life, t)
        self._placed_late()

    def _route(self, i: int, t: float) -> None:
        if not self._serving:
            self._gateway.append(i)
            return
        loads = self._loads
        k = loads.index(min(loads))
        loads[k] += 1
        rep = self._serving[k]
        rep.waiting.append(i)
        if len(rep.pf) + len(rep.dec) < self._max_seqs:
            prefilling = bool(rep.pf)  # if so, its end stays the next event
            self._sync(rep, t)
            if self._admit(rep, t) and not prefilling:
                self._start_prefill(rep, t)

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

    def _start_prefill(self, rep: _Replica, t: float) -> None:
        """The head of the prefill queue starts now: its end is the replica's next event."""
        at = rep.pf_end = t + self._prompt[rep.pf[0]] / self._prefill_rate
        self._seq += 1
        rep.due = self._seq
        heapq.heappush(self._heap, (at, self._seq, rep))
