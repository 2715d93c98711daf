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

**Serving model** (per replica): vLLM V1's scheduler, step by step, in `simulations.engine_step` (token
budget shared by decodes and chunked prefill, WAITING/RUNNING as vLLM counts them, KV blocks allocated as
tokens are scheduled, preemption by recompute, prefix caching when the trace carries block hashes).
A request is routed on arrival to the serving replica with the fewest outstanding requests (join the
shortest queue); with no replica serving, it waits at the gateway and goes to the first that is ready.
Queue time = first scheduled − arrival; TTFT = first token − arrival.

**Scale-down** removes the replicas Kubernetes' ReplicaSet would (`autoscaler.core.victims`): replicas
still starting first (not ready; newest first), then among ready ones either the fewest in-flight requests
(`victims="deletion-cost"`: the pod-deletion-cost our controller sets before lowering replicas) or the
ReplicaSet's default ranking (`victims="replicaset"`: the most recently ready first, what every baseline
gets). A removed replica is a terminating pod running the documented preStop drain (docs/scale-down.md):
it is out of the Service at once (it takes no new request) and keeps serving everything it holds (its
running and waiting requests: nothing moves a request out of a vLLM queue) until it is empty or its
`termination_grace_seconds` run out; requests still there then are aborted (SIGKILL), counted in
`aborted` and as SLO misses. GPU time counts until it is gone.

**Histograms** are observed when vLLM observes them: TTFT at the first token; queue time and e2e latency
when the request finishes; inter-token latency for every decode step (a run of decode steps observes its
mean step time).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, replace

import numpy as np

from autoscaler.core import ReplicaCounts
from autoscaler.core.victims import PodLoad, deletion_costs, replicaset_victims
from simulations.engine_step import Book, Engine
from simulations.histograms import Histogram, HistogramSnapshot
from simulations.lifecycle import Lifecycle, LifecycleFacts, ReplicaLife
from simulations.outcome import Outcome, outcome_from_requests
from simulations.profiles import ClusterSpec, ColdStartProfile, ServingProfile
from simulations.sample import FleetSample
from simulations.trace import Trace

STARTING, READY, DRAINING, GONE = "starting", "ready", "draining", "gone"
_EPS = 1e-9
# The grace period of the documented serving side (charts/inference-autoscaler/examples/vllm-graceful-drain.yaml:
# 10 s endpoint propagation + a 180 s bounded drain + 10 s SIGTERM margin).
TERMINATION_GRACE_SECONDS = 200.0
VICTIM_RULES = ("deletion-cost", "replicaset")


def victim_rule(autoscaler: object) -> str:
    """How the fleet picks scale-down victims under `autoscaler`: by deletion cost when it is our controller
    with `spec.scaleDown.deletionCost` on (it sets the annotation), else the ReplicaSet's default ranking."""
    scale_down = getattr(getattr(autoscaler, "policy", None), "scale_down", None)
    return "deletion-cost" if getattr(scale_down, "deletion_cost", False) is True else "replicaset"


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
    prompt_length: HistogramSnapshot | None = None  # vllm:request_prompt_tokens


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
        termination_grace_seconds: float = TERMINATION_GRACE_SECONDS,
        victims: str = "deletion-cost",
    ):
        if not termination_grace_seconds >= 0:
            raise ValueError(f"termination_grace_seconds must be ≥ 0, not {termination_grace_seconds}")
        if victims not in VICTIM_RULES:
            raise ValueError(f"victims must be one of {', '.join(VICTIM_RULES)}, not {victims!r}")
        self.trace = trace
        self.termination_grace_seconds = termination_grace_seconds
        self.victims = victims
        self.serving = serving
        self.lifecycle = Lifecycle(cold_start, cluster or ClusterSpec(), serving.gpus_per_replica, seed)
        self._arr: list[float] = trace.arrival_s.tolist()
        n = len(self._arr)
        self.ttft = np.full(n, np.nan)
        self.queue_time = np.full(n, np.nan)
        self._loads: list[int] = []  # outstanding requests (waiting + running) of each serving replica
        self.book = Book(self._arr, trace.prompt_tokens.tolist(), trace.output_tokens.tolist(),
                         trace.block_hashes, self._loads)
        self._next = 0
        self.now = 0.0
        # (t, seq, replica): the replica's next event if seq == replica.due; for a starting replica, it is
        # ready; else stale (superseded by a later schedule, or the replica is gone)
        self._heap: list[tuple[float, int, Engine]] = []
        self._seq = 0
        self._serving: list[Engine] = []
        self._starting: list[Engine] = []
        self._draining: list[Engine] = []
        self._gateway: deque[int] = deque()
        self.target = initial_replicas
        self._detail = per_replica_histograms
        self.scale_events = 0
        self._kills: list[tuple[float, int, Engine]] = []  # (grace expires, seq, draining replica)
        self._aborted = np.zeros(n, dtype=bool)
        self.aborted_total = 0
        for _ in range(initial_replicas):
            self._add_serving(self._engine(self.lifecycle.add_ready(0.0), READY))

    # ---- fleet totals (the engines write them into the shared book) ---------------------------------
    @property
    def prompt_total(self) -> float:
        return self.book.prompt_total

    @property
    def gen_total(self) -> float:
        return self.book.gen_total

    @property
    def success_total(self) -> int:
        return self.book.success_total

    @property
    def preemptions_total(self) -> int:
        return self.book.preempt_total

    @property
    def queue_h(self) -> Histogram:
        return self.book.queue_h

    @property
    def ttft_h(self) -> Histogram:
        return self.book.ttft_h

    # ---- public API ---------------------------------------------------------------------------------
    @property
    def ready_replicas(self) -> int:
        return len(self._serving)

    @property
    def in_flight(self) -> int:
        """Outstanding requests fleet-wide, gateway included (what KPA counts): arrived and neither finished
        nor aborted."""
        return self._next - self.book.success_total - self.aborted_total

    def advance(self, t_end: float) -> None:
        if t_end < self.now - _EPS:
            raise ValueError(f"time goes forward only: advance({t_end}) after {self.now}")
        kills = self._kills
        while kills and kills[0][0] <= t_end:  # a grace period runs out: events up to then, then the kill
            tk, _, rep = heapq.heappop(kills)
            self._advance(tk)
            if rep.phase_name == DRAINING:
                self._kill(rep, tk)
        self._advance(t_end)

    def _advance(self, t_end: float) -> None:
        arr, heap = self._arr, self._heap
        serving, loads, gateway = self._serving, self._loads, self._gateway
        heappush, heappop, heapreplace = heapq.heappush, heapq.heappop, heapq.heapreplace
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
                if not serving:
                    gateway.append(i)
                else:
                    k = loads.index(min(loads))  # join the shortest queue (the first of equals)
                    loads[k] += 1
                    rep = serving[k]
                    if rep.arrive(i, t_arr):
                        self._seq += 1
                        rep.due = self._seq
                        heappush(heap, (rep.end, self._seq, rep))
                i += 1
                t_arr = arr[i] if i < n else inf
                continue
            # ---- a replica event ----
            if t_ev > t_end:
                break
            t, s, rep = heap[0]
            if s != rep.due:
                heappop(heap)
                if rep.phase_name == STARTING:
                    self._next = i
                    self._became_ready(rep, t)
                continue  # else stale
            rep.event(t)
            if rep.mode:
                self._seq += 1
                rep.due = self._seq
                heapreplace(heap, (rep.end, self._seq, rep))
            else:
                heappop(heap)
                rep.due = 0
                if rep.phase_name == DRAINING and not rep.busy_with_work():
                    self._next = i
                    self._gone(rep, t)
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
            rep = self._engine(self.lifecycle.request(t), STARTING)
            self._starting.append(rep)
            if math.isfinite(rep.life.ready_at):
                self._push_ready(rep.life.ready_at, rep)
            active += 1
        while active > replicas:
            if self._starting:
                rep = self._starting.pop()  # newest first
                rep.phase_name = GONE
                self.lifecycle.cancel(rep.life, t)
            else:
                rep = self._remove_serving(self._victim())
                self._drain(rep, t)
            active -= 1
        self._placed_late()

    def _victim(self) -> int:
        """The slot of the ready replica the ReplicaSet removes next (see `victims`)."""
        loads = self._loads
        if len(loads) == 1:
            return 0
        pods = [PodLoad(str(k), True, float(loads[k]), ready_since=rep.life.ready_at, created=rep.life.requested_at)
                for k, rep in enumerate(self._serving)]
        costs = None
        if self.victims == "deletion-cost":
            # With warm capacity on, among equally loaded replicas the one whose node other pods keep goes
            # first (`Lifecycle.removal_key`; the controller's rule, autoscaler.core.victims).
            warm = self.lifecycle.keeps_nodes_warm
            if warm:
                pods = [replace(p, node_shared=self.lifecycle.removal_key(self._serving[k].life) == 0)
                        for k, p in enumerate(pods)]
            costs = deletion_costs(pods, 1, keep_nodes_warm=warm)
        return int(replicaset_victims(pods, 1, costs)[0])

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
            rep.sync(t)
            out.append(ReplicaSnapshot(
                replica_id=rep.life.rid, phase=rep.phase_name, running=rep.running, waiting=len(rep.waiting),
                kv_cache_usage=rep.kv_usage(), prompt_tokens=rep.prompt_tok, generation_tokens=rep.gen,
                request_success=rep.success, preemptions=rep.preemptions,
                queue_time=rep.queue_h.snapshot(), ttft=rep.ttft_h.snapshot(), e2e_latency=rep.e2e_h.snapshot(),
                inter_token_latency=rep.itl_h.snapshot(), prompt_length=rep.prompt_h.snapshot(),
            ))
        return out

    def scrape(self, t: float) -> FleetSample:
        self.advance(t)
        running = waiting = 0
        kv = 0.0
        reporting = (*self._serving, *self._draining)
        for rep in reporting:
            rep.sync(t)
            running += rep.running
            waiting += len(rep.waiting)
            kv += rep.kv_usage()
        n = len(reporting)
        book = self.book
        return FleetSample(
            time=t, prompt_tokens=book.prompt_total, generation_tokens=book.gen_total,
            request_success=float(book.success_total), queue_time_counts=tuple(book.queue_h.counts),
            ttft_counts=tuple(book.ttft_h.counts), running=float(running), waiting=float(waiting),
            kv_cache_usage=kv / n if n else 0.0, reporting_replicas=n, preemptions=float(book.preempt_total),
            in_flight=float(self.in_flight),
        )

    def outcome(self, slo_ttft_seconds: float) -> Outcome:
        self.ttft[:] = self.book.ttft
        self.queue_time[:] = self.book.qt
        return outcome_from_requests(self.ttft, self.queue_time, slo_ttft_seconds, self.gpu_seconds(),
                                     self.scale_events, aborted=self._aborted)

    @property
    def aborted_mask(self) -> np.ndarray:
        """Per request: whether a scale-down aborted it (read-only view)."""
        view = self._aborted.view()
        view.flags.writeable = False
        return view

    def missed_arrival_times(self, slo_ttft_seconds: float) -> np.ndarray:
        ttft = np.asarray(self.book.ttft)
        return np.asarray(self.trace.arrival_s[~(ttft <= slo_ttft_seconds) | self._aborted])

    # ---- internals --------------------------------------------------------------------------------
    def _engine(self, life: ReplicaLife, phase: str) -> Engine:
        return Engine(self.serving, self.book, life, phase, self._detail)

    def _push(self, rep: Engine) -> None:
        self._seq += 1
        rep.due = self._seq
        heapq.heappush(self._heap, (rep.end, self._seq, rep))

    def _push_ready(self, t: float, rep: Engine) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, rep))

    def _add_serving(self, rep: Engine) -> None:
        rep.slot = len(self._serving)
        self._serving.append(rep)
        self._loads.append(len(rep.waiting) + rep.running)

    def _remove_serving(self, k: int) -> Engine:
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

    def _became_ready(self, rep: Engine, t: float) -> None:
        if rep.phase_name != STARTING:
            return  # cancelled while starting
        self._starting.remove(rep)
        rep.phase_name = READY
        self._add_serving(rep)
        gateway = self._gateway
        while gateway:
            self._route(gateway.popleft(), t)

    def _drain(self, rep: Engine, t: float) -> None:
        """`rep` is terminating: no new requests; it serves what it holds until empty or its grace runs out."""
        rep.sync(t)
        rep.phase_name = DRAINING
        if rep.busy_with_work() or rep.mode:
            self._draining.append(rep)
            if math.isfinite(self.termination_grace_seconds):
                self._seq += 1
                heapq.heappush(self._kills, (t + self.termination_grace_seconds, self._seq, rep))
        else:
            self._gone(rep, t)

    def _kill(self, rep: Engine, t: float) -> None:
        """The grace period ran out while `rep` still held requests: the kubelet kills it; they are aborted."""
        rep.sync(t)
        held = [*rep.dec, *rep.pf, *rep.waiting]
        for j in held:
            if not self._aborted[j]:
                self._aborted[j] = True
                self.aborted_total += 1
        rep.dec.clear()
        rep.pf.clear()
        rep.waiting.clear()
        self._gone(rep, t)

    def _gone(self, rep: Engine, t: float) -> None:
        rep.phase_name = GONE
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
        if rep.arrive(i, t):
            self._push(rep)
