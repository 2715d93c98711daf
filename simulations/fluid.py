"""Fluid fleet: binned arrivals and token work, for multi-day traces.

Same serving model as the request-level fleet (`simulations.fleet`), at the level of the whole fleet and
one bin (default 1 s) at a time:
1. arrivals join one FIFO queue (waiting);
2. they are admitted while sequence slots last: `ready × min(max_num_seqs, KV budget / mean tokens per
   request)` minus those already admitted;
3. prefill runs first, at `prefill_tokens_per_second` per ready replica (prefill has priority);
4. the rest of the bin's replica-time decodes at a per-replica batch `b = decoding / ready`, producing
   `b / (a + b·b_seq)` tokens per replica-second; completions = tokens / mean decode length.

Latency comes from the cumulative curves: arrivals A(t), admissions S(t) and first tokens F(t). The k-th
request (FIFO) arrives at A⁻¹(k), is admitted at S⁻¹(k) and gets its first token at F⁻¹(k); its TTFT is
F⁻¹(k) − A⁻¹(k) plus the spread of its own prefill (the prompt-length distribution) — evaluated at four
points per bin. Scale-down takes capacity away at once; the replica's GPUs are held for an estimated drain
(its share of the running sequences finishing). The public API matches `RequestFleet` (advance,
set_target, replica_counts, cluster_facts, take_observations, scrape, outcome).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left

import numpy as np

from autoscaler.core import ReplicaCounts
from simulations.histograms import REQUEST_LATENCY_BUCKETS, TTFT_BUCKETS, Histogram
from simulations.lifecycle import Lifecycle, LifecycleFacts, ReplicaLife
from simulations.outcome import Outcome
from simulations.profiles import ClusterSpec, ColdStartProfile, ServingProfile
from simulations.sample import FleetSample
from simulations.trace import BinnedWorkload

_COHORT_POINTS = (0.125, 0.375, 0.625, 0.875)


class FluidFleet(LifecycleFacts):
    def __init__(
        self,
        workload: BinnedWorkload,
        serving: ServingProfile,
        cold_start: ColdStartProfile,
        cluster: ClusterSpec | None = None,
        initial_replicas: int = 1,
        seed: int = 0,
        drain_seconds: float = 600.0,
    ):
        self.workload = workload
        self.serving = serving
        self.lifecycle = Lifecycle(cold_start, cluster or ClusterSpec(), serving.gpus_per_replica, seed)
        self.dt = workload.bin_seconds
        nb = len(workload.counts) + math.ceil(drain_seconds / self.dt)
        pad = np.zeros(nb - len(workload.counts))
        self._counts = np.concatenate([workload.counts, pad])
        self._counts_l: list[float] = self._counts.tolist()
        self._prompt_l: list[float] = np.concatenate([workload.prompt_tokens, pad]).tolist()
        self._output_l: list[float] = np.concatenate([workload.output_tokens, pad]).tolist()
        self._cum_arrivals: list[float] = np.concatenate([[0.0], np.cumsum(self._counts)]).tolist()
        self.nbins = nb
        self._admitted = np.zeros(nb + 1)
        self._first = np.zeros(nb + 1)
        self._bin = 0
        self.now = 0.0
        self.target = initial_replicas
        self.ready = initial_replicas
        self._starting: list[ReplicaLife] = []
        self._ready_heap: list[tuple[float, int, ReplicaLife]] = []
        self._ready_lives: list[ReplicaLife] = [self.lifecycle.add_ready(0.0) for _ in range(initial_replicas)]
        self._draining: list[tuple[float, int, ReplicaLife]] = []  # (gone at, id, life)
        ps = workload.prompt_sample
        os_ = workload.output_sample
        self.mean_prompt = float(np.mean(ps))
        self.mean_decode = max(1e-9, float(np.mean(np.maximum(os_ - 1.0, 0.0))))
        self.immediate_share = float(np.mean(os_ <= 1.0))  # requests that finish at their first token
        tokens = float(np.mean(ps + os_)) if len(ps) == len(os_) else self.mean_prompt + float(np.mean(os_))
        self.seqs_per_replica = float(min(serving.max_num_seqs, serving.kv_cache_tokens / max(1.0, tokens)))
        self.tokens_per_request = tokens
        # queue state
        self.waiting = 0.0
        self.waiting_prompt = 0.0
        self.waiting_output = 0.0
        self.prefill_output = 0.0
        self.decoding_length = 0.0  # sum of the decode lengths of the sequences decoding
        self.prefill_n = 0.0
        self.prefill_tokens = 0.0
        self.decoding = 0.0
        self.in_flight = 0.0
        # counters
        self.prompt_total = 0.0
        self.gen_total = 0.0
        self.success_total = 0.0
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)
        self.scale_events = 0

    # ---- public API (same as RequestFleet) --------------------------------------------------------
    @property
    def ready_replicas(self) -> int:
        return self.ready

    def advance(self, t_end: float) -> None:
        if t_end < self.now - 1e-9:
            raise ValueError(f"time goes forward only: advance({t_end}) after {self.now}")
        last = min(self.nbins, math.floor(t_end / self.dt + 1e-9))
        s = self.serving
        dt = self.dt
        a_itl, b_itl = s.itl_base_seconds, s.itl_per_sequence_seconds
        prefill_rate = s.prefill_tokens_per_second
        mean_prefill = self.mean_prompt / prefill_rate
        counts, prompt_in, output_in, cum_a = self._counts_l, self._prompt_l, self._output_l, self._cum_arrivals
        admitted_c, first_c = self._admitted, self._first
        seqs, imm = self.seqs_per_replica, self.immediate_share
        waiting, waiting_p, waiting_o = self.waiting, self.waiting_prompt, self.waiting_output
        pf_o, dec_len = self.prefill_output, self.decoding_length
        pf_n, pf_tok, dec = self.prefill_n, self.prefill_tokens, self.decoding
        prompt_total, gen_total, success = self.prompt_total, self.gen_total, self.success_total
        cum_adm = float(admitted_c[self._bin])
        cum_first = float(first_c[self._bin])
        ttft_obs, queue_obs = self.ttft_h.observe, self.queue_h.observe
        ready_heap = self._ready_heap
        b = self._bin
        while b < last:
            t0 = b * dt
            while ready_heap and ready_heap[0][0] <= t0 + dt:
                self._became_ready(heapq.heappop(ready_heap)[2])
            n = self.ready
            waiting += counts[b]
            waiting_p += prompt_in[b]
            waiting_o += output_in[b]
            if n > 0:
                slots = n * seqs - pf_n - dec
                x = waiting if waiting < slots else (slots if slots > 0 else 0.0)
                if x > 0:
                    share = x / waiting
                    xp = waiting_p * share
                    xo = waiting_o * share
                    waiting -= x
                    waiting_p -= xp
                    waiting_o -= xo
                    pf_n += x
                    pf_tok += xp
                    pf_o += xo
                    # queue time of the admitted cohort (mid-point), as a finished request would report it
                    k = cum_adm + 0.5 * x
                    queue_obs(max(0.0, t0 + 0.5 * dt - _inverse(cum_a, k, dt)), x)  # type: ignore[arg-type]
                    cum_adm += x
                capacity = n * dt
                done_tok = pf_tok if pf_tok < capacity * prefill_rate else capacity * prefill_rate
                if done_tok > 0:
                    done_n = pf_n * done_tok / pf_tok if pf_tok > 0 else pf_n
                    if done_tok >= pf_tok - 1e-9:
                        done_n = pf_n
                    done_o = pf_o * done_n / pf_n if pf_n > 0 else 0.0
                    pf_tok -= done_tok
                    pf_n -= done_n
                    pf_o -= done_o
                    if pf_n < 1e-9:
                        pf_n, pf_tok, pf_o = 0.0, 0.0, 0.0
                    prompt_total += done_tok
                    gen_total += done_n
                    k = cum_first + 0.5 * done_n
                    ttft_obs(max(0.0, t0 + 0.5 * dt - _inverse(cum_a, k, dt)) + mean_prefill, done_n)  # type: ignore[arg-type]
                    cum_first += done_n
                    success += done_n * imm
                    dec += done_n * (1.0 - imm)
                    dec_len += max(0.0, done_o - done_n)  # the first token came with the prefill
                    capacity -= done_tok / prefill_rate
                if dec > 0 and capacity > 0:
                    batch = dec / n
                    tokens = capacity * batch / (a_itl + b_itl * batch)
                    mean_dec = dec_len / dec if dec_len > 0 else 1.0
                    c = tokens / mean_dec
                    if c >= dec:
                        tokens, c = dec_len, dec
                    dec -= c
                    dec_len -= c * mean_dec
                    if dec < 1e-9:
                        dec, dec_len = 0.0, 0.0
                    gen_total += tokens
                    success += c
            admitted_c[b + 1] = cum_adm
            first_c[b + 1] = cum_first
            b += 1
        self._bin = b
        self.waiting, self.waiting_prompt, self.waiting_output = waiting, waiting_p, waiting_o
        self.prefill_output, self.decoding_length = pf_o, dec_len
        self.prefill_n, self.prefill_tokens, self.decoding = pf_n, pf_tok, dec
        self.prompt_total, self.gen_total, self.success_total = prompt_total, gen_total, success
        self.in_flight = waiting + pf_n + dec
        self.now = max(self.now, t_end)
        while self._draining and self._draining[0][0] <= self.now:
            t_gone, _, life = heapq.heappop(self._draining)
            self.lifecycle.gone(life, t_gone)
        self._placed_late()

    def set_target(self, replicas: int, t: float) -> None:
        if replicas < 0:
            raise ValueError("replicas must be ≥ 0")
        self.advance(t)
        if replicas != self.target:
            self.scale_events += 1
        self.target = replicas
        active = self.ready + len(self._starting)
        while active < replicas:
            life = self.lifecycle.request(t)
            self._starting.append(life)
            if math.isfinite(life.ready_at):
                heapq.heappush(self._ready_heap, (life.ready_at, life.rid, life))
            active += 1
        while active > replicas:
            if self._starting:
                life = self._starting.pop()
                self.lifecycle.cancel(life, t)
            else:
                life = self._ready_lives.pop()
                self.ready -= 1
                heapq.heappush(self._draining, (t + self._drain_estimate(), life.rid, life))
            active -= 1
        self._placed_late()

    def replica_counts(self, t: float) -> ReplicaCounts:
        return ReplicaCounts(desired=self.target, ready=self.ready,
                             starting=self.lifecycle.starting_view(self._starting, t),
                             terminating=len(self._draining))

    def scrape(self, t: float) -> FleetSample:
        self.advance(t)
        n = self.ready + len(self._draining)
        running = self.prefill_n + self.decoding
        return FleetSample(
            time=t, prompt_tokens=self.prompt_total, generation_tokens=self.gen_total,
            request_success=self.success_total, queue_time_counts=tuple(self.queue_h.counts),
            ttft_counts=tuple(self.ttft_h.counts), running=running, waiting=self.waiting,
            kv_cache_usage=min(1.0, running * self.tokens_per_request / (n * self.serving.kv_cache_tokens))
            if n else 0.0,
            reporting_replicas=n,
        )

    def _cohorts(self, slo_ttft_seconds: float) -> dict[str, np.ndarray]:
        """Latency per arrival cohort from the cumulative curves (see the module docstring)."""
        self.advance(max(self.now, self.nbins * self.dt))
        nb = len(self.workload.counts)
        edges = np.arange(self.nbins + 1) * self.dt
        cum_a = np.asarray(self._cum_arrivals)
        counts = self._counts[:nb]
        pts = np.asarray(_COHORT_POINTS)
        k = cum_a[:nb, None] + counts[:, None] * pts[None, :]  # [bins, points]
        arrive = edges[:nb, None] + pts[None, :] * self.dt
        first_at = np.interp(k, self._first, edges)
        first_at[k > self._first[-1] + 1e-6] = np.inf
        admit_at = np.interp(k, self._admitted, edges)
        admit_at[k > self._admitted[-1] + 1e-6] = np.inf
        wait = np.maximum(0.0, first_at - arrive)
        with np.errstate(invalid="ignore"):
            budget_tokens = (slo_ttft_seconds - wait) * self.serving.prefill_tokens_per_second
        prompts = self.workload.prompt_sample
        return {
            "counts": counts,
            "wait": wait,
            "queue": np.maximum(0.0, admit_at - arrive),
            "weights": np.repeat(counts[:, None] / len(pts), len(pts), axis=1),
            "ok_share": np.searchsorted(prompts, budget_tokens, side="right") / len(prompts),
        }

    def outcome(self, slo_ttft_seconds: float) -> Outcome:
        c = self._cohorts(slo_ttft_seconds)
        counts, weights, ok_share = c["counts"], c["weights"], c["ok_share"]
        total = float(counts.sum())
        ttft = (c["wait"] + self.mean_prompt / self.serving.prefill_tokens_per_second).ravel()
        w = weights.ravel()
        per_min = max(1, round(60.0 / self.dt))
        miss = ((1.0 - ok_share) * weights).sum(axis=1)
        nmin = -(-len(counts) // per_min)
        pad = nmin * per_min - len(counts)
        miss_m = np.pad(miss, (0, pad)).reshape(nmin, per_min).sum(axis=1)
        count_m = np.pad(counts, (0, pad)).reshape(nmin, per_min).sum(axis=1)
        violation = 60.0 * float(np.sum((count_m > 0) & (miss_m > 0.1 * np.maximum(count_m, 1e-12))))
        return Outcome(
            requests=total,
            attainment=float((ok_share * weights).sum() / total),
            ttft_p50_seconds=_wquantile(ttft, w, 0.5),
            ttft_p90_seconds=_wquantile(ttft, w, 0.9),
            ttft_p99_seconds=_wquantile(ttft, w, 0.99),
            queue_p99_seconds=_wquantile(c["queue"].ravel(), w, 0.99),
            gpu_hours=self.gpu_seconds() / 3600.0,
            scale_events=self.scale_events,
            violation_seconds=violation,
            unserved=float(w[~np.isfinite(ttft)].sum()),
        )

    def missed_arrival_times(self, slo_ttft_seconds: float) -> np.ndarray:
        c = self._cohorts(slo_ttft_seconds)
        miss = ((1.0 - c["ok_share"]) * c["weights"]).sum(axis=1)
        return np.nonzero(miss > 1e-6)[0] * self.dt

    def wait_series(self, step: float = 60.0) -> tuple[np.ndarray, np.ndarray]:
        """Approximate p90 TTFT per `step` of arrivals (the slowest cohort point, plus mean prefill)."""
        c = self._cohorts(float("inf"))
        per = max(1, round(step / self.dt))
        w = c["wait"].max(axis=1) + self.mean_prompt / self.serving.prefill_tokens_per_second
        n = -(-len(w) // per)
        w = np.pad(w, (0, n * per - len(w)), constant_values=np.nan).reshape(n, per)
        with np.errstate(all="ignore"):
            p90 = np.nanquantile(np.minimum(w, 1e6), 0.9, axis=1)
        return np.arange(n) * step, p90

    # ---- internals --------------------------------------------------------------------------------
    def _became_ready(self, life: ReplicaLife) -> None:
        if life in self._starting:
            self._starting.remove(life)
            self._ready_lives.append(life)
            self.ready += 1

    def _placed_late(self) -> None:
        placed = self.lifecycle.newly_placed
        for life in placed:
            if life in self._starting:
                heapq.heappush(self._ready_heap, (life.ready_at, life.rid, life))
        placed.clear()

    def _drain_estimate(self) -> float:
        """Seconds for a removed replica's running sequences to finish: about one mean decode length."""
        if self.ready <= 0 or self.decoding <= 0:
            return 0.0
        batch = self.decoding / max(1, self.ready)
        return self.mean_decode * self.serving.itl(batch)


def _inverse(cum: list[float], k: float, dt: float) -> float:
    """Time at which the cumulative arrival curve (per bin edge) reaches k, linear inside a bin."""
    i = bisect_left(cum, k)
    if i <= 0:
        return 0.0
    if i >= len(cum):
        return (len(cum) - 1) * dt
    lo, hi = cum[i - 1], cum[i]
    return ((i - 1) + ((k - lo) / (hi - lo) if hi > lo else 1.0)) * dt


def _wquantile(x: np.ndarray, w: np.ndarray, q: float) -> float:
    keep = w > 0
    x, w = x[keep], w[keep]
    if len(x) == 0:
        return float("nan")
    order = np.argsort(x, kind="stable")
    cw = np.cumsum(w[order])
    i = int(np.searchsorted(cw, q * cw[-1]))
    return float(x[order][min(i, len(x) - 1)])
