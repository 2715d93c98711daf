"""Fluid fleet: binned arrivals and token work, for multi-day traces.

The same serving model as the request-level fleet (vLLM V1's scheduler, `simulations.engine_step`), for the
whole fleet and one bin (default 1 s) at a time, with the load spread evenly over the ready replicas:
1. arrivals join WAITING; prompt tokens are prefilled first-come first-served;
2. each replica runs engine steps: a decode token for each of its running sequences, the rest of the token
   budget (`max_num_batched_tokens`) for prefill chunks; a step lasts what the engine's step-time model
   says (base + tokens + attended context + prefill attention). When the prefill backlog fills the budget
   the replica is saturated (steps of the full budget), else prefill takes what has arrived and decode the
   rest of the bin;
3. a request is scheduled (leaves WAITING) when its prompt's first chunk is in a step, and has its first
   token when its last chunk is done; admission stops while the running sequences fill `max_num_seqs` or
   the KV cache (tokens per running sequence: mean prompt + half the mean output);
4. decodes emit one token per step each; completions = tokens / mean remaining decode length;
5. at a full KV cache vLLM preempts (recompute): admission fills what completions free, FCFS, until the
   head of WAITING does not fit, so the blocks left free are short of a prompt; a step whose decodes need
   new blocks (batch / block size of them) when no request completed in the step before
   (e^(−batch / mean decode length), completions per step being Poisson) and the leftover is short of that
   growth preempts the newest running request, whose prompt is computed again. The head that does not fit
   is length-biased (a long prompt fails to fit more often), so the leftover is short of the growth g with
   chance E[min(prompt, g)] / E[prompt]: per step e^(−batch / mean decode) · E[min(prompt, batch)] prompt
   tokens are redone (their share of the step's budget is lost to useful prefill), counted as preemptions.

Latency comes from cumulative curves: arrivals A(t) and scheduled requests S(t) (in prompt-token order:
a request is scheduled when the prefill pointer plus the chunks in flight reach it). The k-th request
waits S⁻¹(k) − A⁻¹(k), then half an engine step (the step in flight ends) and its own step (base + the
decodes beside it + its prompt); its TTFT is checked against the SLO over the prompt-length distribution.

Scale-down works as in the request-level fleet: starting replicas go first; a ready replica stops taking
requests, its share of the decoding sequences finishes on it (drain, decoding at its own batch), and it is
gone (GPUs released) when they are done. The public API matches `RequestFleet` (advance, set_target,
replica_counts, cluster_facts, take_observations, scrape, outcome).
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
        self._init_bins(workload, drain_seconds)
        self._init_fleet(initial_replicas)
        self._init_mix(workload, serving)
        self._init_queue(seed)

    def _init_bins(self, workload: BinnedWorkload, drain_seconds: float) -> None:
        """The arrivals per bin, padded with empty bins for the drain, and their running sums."""
        nb = len(workload.counts) + math.ceil(drain_seconds / self.dt)
        pad = np.zeros(nb - len(workload.counts))
        self._counts = np.concatenate([workload.counts, pad])
        self._counts_l: list[float] = self._counts.tolist()
        self._prompt_l: list[float] = np.concatenate([workload.prompt_tokens, pad]).tolist()
        self._output_l: list[float] = np.concatenate([workload.output_tokens, pad]).tolist()
        self._cum_arrivals: list[float] = np.concatenate([[0.0], np.cumsum(self._counts)]).tolist()
        self.nbins = nb
        self._bin = 0
        self.now = 0.0
        # prompt-token order of the requests: cumulative prompt tokens and requests at the bin edges
        self._cum_tokens: list[float] = np.concatenate([[0.0], np.cumsum(np.concatenate([workload.prompt_tokens,
                                                                                          pad]))]).tolist()
        self._sched = np.zeros(nb + 1)  # cumulative requests scheduled (left WAITING) at bin edges
        self._extra = np.zeros(nb)  # per bin: half a step in flight + the fixed part of a request's own step
        # per bin, when the prefill backlog fills every step's budget: the step's length and its prefill room
        self._sat_step = np.zeros(nb)
        self._sat_room = np.zeros(nb)

    def _init_fleet(self, initial_replicas: int) -> None:
        self.target = initial_replicas
        self.ready = initial_replicas
        self._starting: list[ReplicaLife] = []
        self._ready_heap: list[tuple[float, int, ReplicaLife]] = []
        self._ready_lives: list[ReplicaLife] = [self.lifecycle.add_ready(0.0) for _ in range(initial_replicas)]
        self._drain_pool: list[list] = []  # [decoding, decode tokens left, life, completions/step] per replica
        self.scale_events = 0

    def _init_mix(self, workload: BinnedWorkload, serving: ServingProfile) -> None:
        """The request mix's moments and what a replica's steps cost for it."""
        ps = workload.prompt_sample
        os_ = workload.output_sample
        self.mean_prompt = float(np.mean(ps))
        self._sorted_prompts: list[float] = np.sort(np.maximum(ps, 1.0)).tolist()
        self._prompt_prefix: list[float] = np.concatenate([[0.0], np.cumsum(self._sorted_prompts)]).tolist()
        self._mean_prompt_sq = max(1.0, float(np.mean(ps * ps)))
        self.mean_decode = max(1e-9, float(np.mean(np.maximum(os_ - 1.0, 0.0))))
        self.immediate_share = float(np.mean(os_ <= 1.0))  # requests that finish at their first token
        # tokens a running sequence holds in the KV cache, averaged over the time it runs: its prompt and half
        # its output, weighted by its decode time (long outputs are over-represented in the running set)
        tokens = self.mean_prompt + 0.5 * float(np.mean(os_ * os_)) / max(1e-9, float(np.mean(os_)))
        self.seqs_per_replica = float(min(serving.max_num_seqs, serving.kv_cache_tokens / max(1.0, tokens)))
        self.tokens_per_request = tokens
        per_token = 1.0 / serving.prefill_tokens_per_second
        self._base = serving.itl_base_seconds
        # one prefill token (its share of the attention over its own prompt), one decode token (its context)
        self._cp = per_token + serving.attention_seconds_per_token_pair * (self.mean_prompt + 1.0) * 0.5
        self._cd = per_token + serving.itl_per_sequence_seconds + serving.kv_read_seconds_per_token * tokens
        self._budget = float(serving.max_num_batched_tokens)
        self._per_prompt = np.full(self.nbins, self._cp)  # per bin: seconds per prompt token of a request's prefill

    def _init_queue(self, seed: int) -> None:
        """The queue, the sequences in the engines and the counters, all empty."""
        self.waiting = 0.0
        self.waiting_prompt = 0.0
        self.waiting_output = 0.0
        self.in_step = 0.0  # arrivals of the last bin waiting for the step in flight to end (scrape gauge)
        self._gauge_rng = np.random.default_rng([seed, 0x5C2A])  # the count a scrape catches (see `scrape`)
        self.prefill_output = 0.0
        self.decoding_length = 0.0  # sum of the decode lengths of the sequences decoding
        self.prefill_n = 0.0  # scheduled, prompt not done (partially prefilled)
        self.prefill_tokens = 0.0  # their prompt tokens left
        self.processed_tokens = 0.0  # cumulative prompt tokens prefilled (the FIFO pointer)
        self.decoding = 0.0
        self.in_flight = 0.0
        self.prompt_total = 0.0
        self.gen_total = 0.0
        self.success_total = 0.0
        self.preempt_total = 0.0  # preemptions (recompute) at a full KV cache, vllm:num_preemptions_total
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)

    # ---- public API (same as RequestFleet) --------------------------------------------------------
    @property
    def ready_replicas(self) -> int:
        return self.ready

    def advance(self, t_end: float) -> None:
        if t_end < self.now - 1e-9:
            raise ValueError(f"time goes forward only: advance({t_end}) after {self.now}")
        last = min(self.nbins, math.floor(t_end / self.dt + 1e-9))
        dt = self.dt
        base, cp, cd, budget = self._base, self._cp, self._cd, self._budget
        counts, prompt_in, output_in = self._counts_l, self._prompt_l, self._output_l
        cum_tokens, cum_a = self._cum_tokens, self._cum_arrivals
        sched_c, extra, per_prompt = self._sched, self._extra, self._per_prompt
        sat_step, sat_room = self._sat_step, self._sat_room
        seqs, imm = self.seqs_per_replica, self.immediate_share
        mean_p, mean_p2 = self.mean_prompt, self._mean_prompt_sq
        waiting, waiting_p, waiting_o = self.waiting, self.waiting_prompt, self.waiting_output
        pf_o, dec_len = self.prefill_output, self.decoding_length
        pf_n, pf_tok, dec = self.prefill_n, self.prefill_tokens, self.decoding
        done_x = self.processed_tokens
        prompt_total, gen_total, success = self.prompt_total, self.gen_total, self.success_total
        preempt = self.preempt_total
        ttft_obs, queue_obs = self.ttft_h.observe, self.queue_h.observe
        ready_heap = self._ready_heap
        kv_bound = self.seqs_per_replica < self.serving.max_num_seqs
        b = self._bin
        while b < last:
            t0 = b * dt
            while ready_heap and ready_heap[0][0] <= t0 + dt:
                self._became_ready(heapq.heappop(ready_heap)[2])
            n = self.ready
            waiting += counts[b]
            waiting_p += prompt_in[b]
            waiting_o += output_in[b]
            step_extra = base
            in_step = 0.0
            if n > 0:
                batch = dec / n
                step0 = base + batch * cd  # the decode part of a step
                # requests that may be scheduled: sequence slots (max_num_seqs, KV) left
                slots = n * seqs - pf_n - dec
                adm = waiting if waiting < slots else (slots if slots > 0 else 0.0)
                adm_tok = waiting_p * adm / waiting if waiting > 0 else 0.0
                avail = (pf_tok + adm_tok) / n  # prefill tokens per replica
                room = budget - batch if budget > batch else 0.0
                # recompute per step (prompt tokens redone by preempted requests) when the KV cache is full
                redo = self._redo(batch) if kv_bound and waiting > slots else 0.0
                steps, x, chunk, full = _bin_steps(avail, dec > 0, step0, room, redo, dt, cp, base, budget)
                if full > 0:
                    sat_step[b], sat_room[b] = full, (room if dec > 0 else budget)
                if redo > 0 and steps > 0:
                    preempt += n * steps * redo / mean_p
                step_extra = 0.5 * (step0 + chunk * cp) + step0
                in_step = _in_step(counts[b], dt, n, steps, x, chunk, step0, cp, mean_p, mean_p2)
                age = in_step / (counts[b] / dt) if counts[b] > 0 else 0.0
                done_tok = x * n
                if done_tok > 0:
                    (new_n, fin_n, fin_tok, fin_o, waiting, waiting_p, waiting_o, pf_n, pf_tok, pf_o) = _prefill_fifo(
                        done_tok, n * chunk, adm, adm_tok, waiting, waiting_p, waiting_o, pf_n, pf_tok, pf_o)
                    done_x += fin_tok
                    prompt_total += fin_tok
                    gen_total += fin_n
                    success += fin_n * imm
                    dec += fin_n * (1.0 - imm)
                    dec_len += max(0.0, fin_o - fin_n)  # the first token came with the prefill
                    if new_n > 0:
                        # queue time of the newly scheduled (mid-point), as a finished request would report it
                        k = sched_c[b] + 0.5 * new_n
                        # + the mean age of the step in flight when it arrived (it is admitted when that ends)
                        queue_obs(max(0.0, t0 + 0.5 * dt - _inverse(cum_a, k, dt)) + age, new_n)  # type: ignore[arg-type]
                    if fin_n > 0:
                        k = _interp(cum_tokens, cum_a, done_x - 0.5 * fin_tok)
                        ttft_obs(max(0.0, t0 + 0.5 * dt - _inverse(cum_a, k, dt)) + step_extra
                                 + self.mean_prompt * cp, fin_n)  # type: ignore[arg-type]
                if dec > 0 and steps > 0:
                    tokens, c, dec, dec_len = _decode(steps * batch * n, dec, dec_len)
                    gen_total += tokens
                    success += c
            if self._drain_pool:
                gen_total, success = self._drain_bin(t0, dt, gen_total, success)
            sched_c[b + 1] = cum_a[b + 1] - waiting
            self.in_step = in_step if in_step < counts[b] else counts[b]
            extra[b] = step_extra
            if n > 0:
                # a prompt longer than what the decodes leave of the budget takes more steps, each with them
                per_prompt[b] = cp + step0 / room if room > 0 else cp
            b += 1
        self._bin = b
        self.waiting, self.waiting_prompt, self.waiting_output = waiting, waiting_p, waiting_o
        self.prefill_output, self.decoding_length = pf_o, dec_len
        self.prefill_n, self.prefill_tokens, self.decoding = pf_n, pf_tok, dec
        self.processed_tokens = done_x
        self.prompt_total, self.gen_total, self.success_total = prompt_total, gen_total, success
        self.preempt_total = preempt
        self.in_flight = waiting + pf_n + dec + sum(e[0] for e in self._drain_pool)
        self.now = max(self.now, t_end)
        if self._drain_pool:
            keep = []
            for entry in self._drain_pool:
                if len(entry) > 4:  # drained: gone at the end of the bin that finished it
                    self.lifecycle.gone(entry[2], entry[4])
                else:
                    keep.append(entry)
            self._drain_pool = keep
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
                # the replica's share of the decoding sequences finishes on it; its share of the requests in
                # prefill or waiting goes back to the others (the request-level fleet re-routes its waiting
                # requests; a partial prefill there finishes first, a step's worth, which is neglected here)
                life = self._ready_lives.pop()
                share = 1.0 / self.ready
                d_n, d_len = self.decoding * share, self.decoding_length * share
                self.decoding -= d_n
                self.decoding_length -= d_len
                self.ready -= 1
                if d_n > 1e-9:
                    # remaining lengths taken as uniform on [0, 2 × mean]: a constant completion rate per step,
                    # so the replica is empty after twice the mean remaining length (not a geometric tail)
                    self._drain_pool.append([d_n, d_len, life, d_n * d_n / (2.0 * max(d_len, 1.0))])
                else:
                    self.lifecycle.gone(life, t)
            active -= 1
        self._placed_late()

    def replica_counts(self, t: float) -> ReplicaCounts:
        return ReplicaCounts(desired=self.target, ready=self.ready,
                             starting=self.lifecycle.starting_view(self._starting, t),
                             terminating=len(self._drain_pool))

    def scrape(self, t: float) -> FleetSample:
        self.advance(t)
        n = self.ready + len(self._drain_pool)
        running = self.prefill_n + self.decoding + sum(e[0] for e in self._drain_pool)
        # vLLM's waiting gauge at an instant: the backlog plus the requests that arrived during the steps in
        # flight. The latter is a count, not its mean: a scrape catches a Poisson draw around it (an
        # autoscaler's stabilization window takes the max over such draws, which the mean would understate)
        rng = self._gauge_rng
        in_step = float(rng.poisson(self.in_step)) if self.in_step > 0 else 0.0
        waiting = self.waiting + in_step
        # the running gauge is a count too: the requests in service of a many-server queue (continuous
        # batching serves them all at once) are Poisson-distributed around their mean (M/G/∞), up to the
        # cap that `max_num_seqs` and the KV cache put on the running set
        mean_running = max(0.0, running - self.in_step)
        cap = n * self.seqs_per_replica + sum(e[0] for e in self._drain_pool)
        running = min(float(rng.poisson(mean_running)), max(cap, mean_running)) if mean_running > 0 else 0.0
        return FleetSample(
            time=t, prompt_tokens=self.prompt_total, generation_tokens=self.gen_total,
            request_success=self.success_total, queue_time_counts=tuple(self.queue_h.counts),
            ttft_counts=tuple(self.ttft_h.counts), running=running, waiting=waiting,
            kv_cache_usage=min(1.0, running * self.tokens_per_request / (n * self.serving.kv_cache_tokens))
            if n else 0.0,
            reporting_replicas=n, preemptions=self.preempt_total,
            in_flight=self.in_flight_requests,
        )

    @property
    def in_flight_requests(self) -> float:
        """The gateway's gauge of outstanding requests (`in_flight`, held ones included), in whole requests as a
        gauge counts them: what a scaleFromZero query reads of this fleet."""
        return float(round(self.in_flight))

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
        sched = self._sched
        sched_at = np.interp(k, sched, edges)
        sched_at[k > sched[-1] + 1e-6] = np.inf
        queue = np.maximum(0.0, sched_at - arrive) + 0.5 * self._base  # + the step in flight (≥ a bare step)
        # after it is scheduled: the rest of the step in flight and its own step (the decodes beside it and
        # its prompt), taken at the bin it arrived in
        wait = queue + self._extra[:nb, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            budget_tokens = (slo_ttft_seconds - wait) / self._per_prompt[:nb, None]
            # saturated bins: the request's first token ends the step that carries its last chunk; every step
            # is a full budget (the rest of the step in flight, then ceil(prompt / room) steps)
            full, room = self._sat_step[:nb, None], self._sat_room[:nb, None]
            sat = full > 0
            steps_fit = np.floor((slo_ttft_seconds - queue - 0.5 * full) / np.where(sat, full, 1.0))
            budget_tokens = np.where(sat, room * steps_fit, budget_tokens)
            wait = np.where(sat, queue + 1.5 * full - self.mean_prompt * self._cp, wait)
        prompts = self.workload.prompt_sample
        return {
            "counts": counts,
            "wait": wait,
            "queue": queue,
            "weights": np.repeat(counts[:, None] / len(pts), len(pts), axis=1),
            "ok_share": np.searchsorted(prompts, budget_tokens, side="right") / len(prompts),
        }

    def outcome(self, slo_ttft_seconds: float) -> Outcome:
        c = self._cohorts(slo_ttft_seconds)
        counts, weights, ok_share = c["counts"], c["weights"], c["ok_share"]
        total = float(counts.sum())
        ttft = (c["wait"] + self.mean_prompt * self._cp).ravel()
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
        w = c["wait"].max(axis=1) + self.mean_prompt * self._cp
        n = -(-len(w) // per)
        w = np.pad(w, (0, n * per - len(w)), constant_values=np.nan).reshape(n, per)
        with np.errstate(all="ignore"):
            p90 = np.nanquantile(np.minimum(w, 1e6), 0.9, axis=1)
        return np.arange(n) * step, p90

    # ---- internals --------------------------------------------------------------------------------
    def _redo(self, batch: float) -> float:
        """Prompt tokens recomputed per step of a replica whose KV cache is full (see the module docstring):
        the chance that a step frees no blocks (no completion: e^(-batch / mean decode length)) while what
        admission left free is short of the decodes' growth (batch tokens), times the victim's prompt."""
        return math.exp(-batch / self.mean_decode) * self._mean_min_prompt(batch)

    def _mean_min_prompt(self, g: float) -> float:
        """E[min(prompt, g)] over the workload's prompt sample."""
        p = self._sorted_prompts
        i = bisect_left(p, g)
        return (self._prompt_prefix[i] + g * (len(p) - i)) / len(p)

    def _drain_bin(self, t0: float, dt: float, gen: float, done: float) -> tuple[float, float]:
        """Draining replicas decode their own sequences for one bin (each at its own batch): the counters of
        generated tokens and completed requests (`gen`, `done`) after it. A replica whose sequences are done
        is stamped with the bin's end."""
        base, cd = self._base, self._cd
        for entry in self._drain_pool:
            d_n, d_len, rate = entry[0], entry[1], entry[3]
            if d_n <= 0:
                continue
            steps = dt / (base + d_n * cd)
            tokens = steps * d_n
            c = steps * rate
            if c >= d_n - 1e-6 or tokens >= d_len:
                tokens, c = d_len, d_n
            entry[0] = d_n - c if d_n - c > 1e-9 else 0.0
            entry[1] = d_len - tokens if entry[0] > 0 else 0.0
            gen += tokens
            done += c
            if entry[0] <= 0:
                entry.append(t0 + dt)
        return gen, done

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


def _bin_steps(avail: float, decoding: bool, step0: float, room: float, redo: float, dt: float, cp: float,
               base: float, budget: float) -> tuple[float, float, float, float]:
    """One replica's engine steps in a bin: (steps, prefill tokens done, the prefill chunk per step, the
    length of a full-budget step when the prefill backlog fills every step, else 0). `avail`: prefill tokens
    waiting per replica; `step0`: the decode part of a step; `room`: the budget the decodes leave; `redo`:
    prompt tokens recomputed per step at a full KV cache. With no decodes, steps are prefill-only (0 counted)."""
    if decoding:
        steps = (dt - avail * cp) / (step0 + redo * cp)
        if steps <= 0 or avail > steps * (room - redo):  # saturated: every step a full budget
            steps = dt / (step0 + room * cp)
            x = steps * (room - redo if room > redo else 0.0)
            return steps, x, (x / steps if steps > 0 else 0.0), step0 + room * cp
        return steps, avail, (avail / steps if steps > 0 else 0.0), 0.0
    x_max = dt / (base / budget + cp)  # full-budget prefill steps for the whole bin
    x = avail if avail < x_max else x_max
    return 0.0, x, (x if x < budget else budget), (base + budget * cp if avail >= x_max else 0.0)


def _in_step(arrivals: float, dt: float, n: int, steps: float, x: float, chunk: float, step0: float, cp: float,
             mean_p: float, mean_p2: float) -> float:
    """Requests that arrived during the step in flight, per replica fleet (vLLM's `num_requests_waiting` at an
    instant holds them until that step ends): arrival rate × the step's mean age, the length-biased mean over
    the bin's steps. Prompts arrive in lumps: with few arrivals per step, each prefill step carries about one
    prompt and the others are decode-only."""
    lumps = arrivals / n
    if steps > lumps > 0:
        # a prefill step lasts step0 + p·cp for a prompt p drawn from the workload's (E[p²] kept)
        f = x * cp / (lumps * mean_p)
        pf_sq = step0 * step0 + 2.0 * step0 * f * mean_p + f * f * mean_p2
        sq = lumps * pf_sq + (steps - lumps) * step0 * step0
        return arrivals / dt * sq / (2.0 * dt)
    return arrivals / dt * 0.5 * (dt / steps if steps > 0 else step0 + chunk * cp)


def _prefill_fifo(done_tok: float, in_flight_tok: float, adm: float, adm_tok: float, waiting: float,
                  waiting_p: float, waiting_o: float, pf_n: float, pf_tok: float, pf_o: float
                  ) -> tuple[float, float, float, float, float, float, float, float, float, float]:
    """The fleet's prefill pointer moved by `done_tok` prompt tokens, first-come first-served: the partial
    prefills first, then admitted waiting requests, which are scheduled (leave WAITING) once their tokens
    start before the pointer plus the chunks in flight (`in_flight_tok`). Returns (newly scheduled, finished
    prefill, its prompt tokens, its output tokens, then the waiting and in-prefill requests, prompt and
    output tokens after the bin)."""
    from_pf = done_tok if done_tok < pf_tok else pf_tok
    done_pf_n = pf_n * from_pf / pf_tok if pf_tok > 0 else 0.0
    if from_pf >= pf_tok - 1e-9:
        done_pf_n = pf_n
    rest = done_tok - from_pf
    take = adm_tok if adm_tok < rest + in_flight_tok else rest + in_flight_tok
    new_n = adm * take / adm_tok if adm_tok > 0 else 0.0
    new_tok = take
    new_o = waiting_o * new_n / waiting if waiting > 0 else 0.0
    waiting, waiting_p, waiting_o = _less(waiting, waiting_p, waiting_o, new_n, new_tok, new_o)
    pf_n += new_n
    pf_tok += new_tok
    pf_o += new_o
    # of those, done: everything the pointer passed
    fin_tok = done_tok if done_tok < pf_tok else pf_tok
    fin_n = done_pf_n + (new_n * rest / new_tok if new_tok > 0 else 0.0)
    if fin_tok >= pf_tok - 1e-9:
        fin_n = pf_n
    fin_n = fin_n if fin_n < pf_n else pf_n
    fin_o = pf_o * fin_n / pf_n if pf_n > 0 else 0.0
    pf_n, pf_tok, pf_o = _less(pf_n, pf_tok, pf_o, fin_n, fin_tok, fin_o)
    return new_n, fin_n, fin_tok, fin_o, waiting, waiting_p, waiting_o, pf_n, pf_tok, pf_o


def _less(n: float, tok: float, out: float, dn: float, dtok: float, dout: float) -> tuple[float, float, float]:
    """A pool of requests, their prompt tokens and output tokens, less what left it; empty once under 1e-9
    requests are left (rounding, not requests)."""
    n, tok, out = n - dn, tok - dtok, out - dout
    return (0.0, 0.0, 0.0) if n < 1e-9 else (n, tok, out)


def _decode(tokens: float, dec: float, dec_len: float) -> tuple[float, float, float, float]:
    """`tokens` decode tokens over the decoding sequences: (tokens emitted, sequences completed, sequences
    and their decode tokens left). Completions = tokens / the mean remaining decode length."""
    mean_dec = dec_len / dec if dec_len > 0 else 1.0
    c = tokens / mean_dec
    if c >= dec:
        tokens, c = dec_len, dec
    dec -= c
    dec_len -= c * mean_dec
    if dec < 1e-9:
        dec, dec_len = 0.0, 0.0
    return tokens, c, dec, dec_len


def _interp(xs: list[float], ys: list[float], x: float) -> float:
    """np.interp for one point on lists (xs non-decreasing)."""
    i = bisect_left(xs, x)
    if i <= 0:
        return ys[0]
    if i >= len(xs):
        return ys[-1]
    x0, x1 = xs[i - 1], xs[i]
    return ys[i] if x1 <= x0 else ys[i - 1] + (ys[i] - ys[i - 1]) * (x - x0) / (x1 - x0)


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
