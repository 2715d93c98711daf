"""One simulated vLLM V1 engine: the scheduler's per-step decisions, jumped over analytically.

Follows `vllm/v1/core/sched/scheduler.py` (`Scheduler.schedule`, read at vllm-project/vllm commit
00024d314514900f361ad072af6931e403b7f589; docs/vllm-replica-model.md has the details and the defaults):

- Each engine step has a token budget (`max_num_batched_tokens`). The RUNNING requests are served first, in
  order: a decoding request takes one token, a request still in prefill takes `min(remaining, budget)`
  (chunked prefill). Then, only if nothing was preempted this step, WAITING requests are admitted in FCFS
  order while the budget lasts and fewer than `max_num_seqs` run; the last one admitted may get a partial
  chunk. An admitted request is RUNNING from then on, partially prefilled or not.
- KV cache in blocks of `block_size` tokens, allocated as tokens are scheduled (`allocate_slots`). When a
  running request cannot get its block, the last request in RUNNING is preempted (recompute: its blocks are
  freed, `num_computed_tokens` = 0, back to the head of WAITING); a waiting request that does not fit just
  waits.
- With prefix caching (a trace with block hashes), an admitted request's longest cached prefix of full
  blocks is not recomputed (at most `num_tokens − 1` tokens, as `get_computed_blocks` caps it); cached
  blocks no request holds stay reusable until their space is needed (LRU eviction).
- Metrics as `vllm/v1/metrics`: `num_requests_waiting` = len(waiting), `num_requests_running` =
  len(running); queue time = first SCHEDULED − arrival (later preemptions ignored); TTFT at the first
  token; queue time and e2e latency observed when the request finishes; preemptions counted.

**Speed.** Only steps that differ are simulated one by one (a step carrying a prefill chunk, a step with a
preemption). Between them, a run of decode-only steps keeps the same batch; the only thing that changes is
the attended context (+1 token per sequence per step), so step k of a run lasts `d0 + k·slope` and the run
is one event, ending at the next completion or where the KV blocks would run out. A decoding sequence's
progress is a per-engine step counter `v` (tokens computed = base + v), so a step costs O(1), not O(batch);
KV blocks held by the decoding sequences are counted from their phases modulo the block size.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from simulations.histograms import ITL_BUCKETS, PROMPT_TOKEN_BUCKETS, REQUEST_LATENCY_BUCKETS, TTFT_BUCKETS, Histogram
from simulations.profiles import ServingProfile

IDLE, RUN, MIXED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class StepCost:
    """Duration of one engine step (docs/vllm-replica-model.md, calibration).

    base + prefill tokens · per_token + decode tokens · per_decode + context tokens the decodes attend ·
    kv_read + (query, key) pairs of the prefill chunks · attention_pair
    """

    base: float
    per_token: float
    per_decode: float
    kv_read: float
    attention_pair: float

    @classmethod
    def of(cls, s: ServingProfile) -> StepCost:
        per_token = 1.0 / s.prefill_tokens_per_second
        return cls(s.itl_base_seconds, per_token, per_token + s.itl_per_sequence_seconds,
                   s.kv_read_seconds_per_token, s.attention_seconds_per_token_pair)

    def step(self, decodes: int, context: int, chunks: list[tuple[int, int, int]] | None = None) -> float:
        """A step with `decodes` decode tokens attending `context` tokens in total, plus prefill chunks
        given as (request, start, tokens)."""
        t = self.base + decodes * self.per_decode + context * self.kv_read
        if chunks:
            for _, start, n in chunks:
                t += n * self.per_token + n * (start + (n + 1) * 0.5) * self.attention_pair
        return t


class Book:
    """Per-request state shared by the engines of one fleet, plus the fleet's counters."""

    def __init__(self, arrival: list[float], prompt: list[int], output: list[int],
                 hashes: tuple[tuple[int, ...], ...] | None, loads: list[int]):
        n = len(arrival)
        self.arr, self.prompt, self.out, self.hashes = arrival, prompt, output, hashes
        self.computed = [0] * n  # num_computed_tokens of a request in prefill (decodes: base + v)
        self.emitted = [0] * n  # output tokens so far
        self.base = [0] * n  # decoding: computed tokens = base + engine.v
        self.done_v = [0] * n  # decoding: the engine's v at which the last token comes
        self.held = [0] * n  # in prefill: private KV blocks held
        self.kref = [0] * n  # prefix-cache blocks referenced (hits and blocks it registered)
        self.qt = [math.nan] * n
        self.ttft = [math.nan] * n
        self.loads = loads  # outstanding requests per serving slot (the fleet's router reads it)
        self.prompt_total = 0.0
        self.gen_total = 0.0
        self.success_total = 0
        self.preempt_total = 0
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)

    def add(self, arrival: float, prompt: int, output: int) -> int:
        """One more request (a live caller, not a trace; no prefix-cache hashes); returns its index."""
        assert self.hashes is None
        for col in (self.computed, self.emitted, self.base, self.done_v, self.held, self.kref):
            col.append(0)
        self.qt.append(math.nan)
        self.ttft.append(math.nan)
        self.arr.append(arrival)
        self.prompt.append(prompt)
        self.out.append(output)
        return len(self.arr) - 1


class Engine:
    """One replica's vLLM engine. Time moves through `event` (the step or run in flight ends), `arrive`
    and `sync` (bring counters up to t for a scrape without changing what is in flight)."""

    __slots__ = (
        "B",
        "E",
        "KD",
        "P",
        "Q",
        "SB",
        "b",
        "book",
        "bs",
        "cache",
        "chunks",
        "cost",
        "d0",
        "dec",
        "detail",
        "due",
        "e2e_h",
        "end",
        "gen",
        "heap",
        "itl_h",
        "k",
        "life",
        "lru",
        "max_seqs",
        "mode",
        "pf",
        "phase",
        "phase_name",
        "preemptions",
        "prompt_h",
        "prompt_tok",
        "queue_h",
        "slope",
        "slot",
        "success",
        "t0",
        "total_blocks",
        "ttft_h",
        "v",
        "waiting",
    )

    def __init__(self, serving: ServingProfile, book: Book, life: Any, phase: str, detail: bool):
        self.book = book
        self.life = life
        self.phase_name = phase
        self.cost = StepCost.of(serving)
        self.B = serving.max_num_batched_tokens
        self.max_seqs = serving.max_num_seqs
        self.bs = serving.block_size
        self.total_blocks = serving.kv_cache_tokens // serving.block_size
        self.detail = detail
        self.waiting: deque[int] = deque()
        self.dec: dict[int, None] = {}  # decoding requests in RUNNING order
        self.heap: list[tuple[int, int]] = []  # (done_v, request)
        self.pf: list[int] = []  # requests in RUNNING still in prefill (the tail of RUNNING)
        self.v = 0
        self.b = 0
        self.phase = [0] * serving.block_size  # decoding requests by base mod block size
        self.Q = 0  # Σ base // block size
        self.SB = 0  # Σ base
        self.KD = 0  # Σ prefix-cache blocks referenced by decoding requests
        self.P = 0  # private blocks of requests in prefill
        self.E = 0  # prefix-cache blocks referenced by someone
        self.cache: dict[int, int] = {}  # block hash -> references (0: evictable, also in lru)
        self.lru: OrderedDict[int, None] = OrderedDict()
        self.mode = IDLE
        self.chunks: list[tuple[int, int, int]] = []  # the mixed step in flight: (request, start, tokens)
        self.t0 = 0.0  # run: start of its next step
        self.d0 = 0.0  # run: duration of its next step
        self.slope = 0.0  # run: added per step
        self.k = 0  # run: steps left
        self.end = 0.0  # when the step or run in flight ends
        self.slot = -1
        self.due = 0
        self.prompt_tok = 0.0
        self.gen = 0.0
        self.success = 0
        self.preemptions = 0
        self.queue_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.ttft_h = Histogram(TTFT_BUCKETS)
        self.e2e_h = Histogram(REQUEST_LATENCY_BUCKETS)
        self.itl_h = Histogram(ITL_BUCKETS)
        self.prompt_h = Histogram(PROMPT_TOKEN_BUCKETS)  # vllm:request_prompt_tokens, observed at finish

    # ---- gauges --------------------------------------------------------------------------------
    @property
    def running(self) -> int:
        return self.b + len(self.pf)

    @property
    def idle(self) -> bool:
        return self.mode == IDLE

    def busy_with_work(self) -> bool:
        return bool(self.dec or self.pf or self.waiting)

    def used_blocks(self) -> int:
        return self._held_dec(self.v) + self.P + self.E

    def kv_usage(self) -> float:
        return min(1.0, self.used_blocks() / self.total_blocks) if self.total_blocks else 0.0

    def _held_dec(self, x: int) -> int:
        """Blocks held by the decoding requests when each has base + x tokens in the cache."""
        if not self.b:
            return 0
        bs = self.bs
        h = self.Q - self.KD
        x += bs - 1
        for r, c in enumerate(self.phase):
            if c:
                h += c * ((r + x) // bs)
        return h

    # ---- time ------------------------------------------------------------------------------------
    def sync(self, t: float) -> None:
        """Apply the decode steps of the run in flight that end by t (nothing else changes)."""
        if self.mode != RUN or t <= self.t0:
            return
        k = _steps_within(t - self.t0, self.d0, self.slope, self.k - 1)
        if k > 0:
            self._apply_run(k)

    def _apply_run(self, k: int) -> None:
        b = self.b
        d0, s = self.d0, self.slope
        span = k * d0 + s * k * (k - 1) * 0.5
        self.t0 += span
        self.d0 = d0 + k * s
        self.k -= k
        self.v += k
        tokens = k * b
        self.gen += tokens
        self.book.gen_total += tokens
        if self.detail:
            self.itl_h.observe(span / k, tokens)

    def arrive(self, i: int, t: float) -> bool:
        """Request i joins WAITING at t. True if the engine's next event moved (the caller re-queues it)."""
        w = self.waiting
        w.append(i)
        mode = self.mode
        if mode == IDLE:
            self._schedule(t)
            return True
        if mode == RUN and len(w) == 1 and self.b + len(self.pf) < self.max_seqs:
            # the next step may admit it: the run ends with the step in flight
            self.sync(t)
            if self.k > 1:
                self.k = 1
                self.end = self.t0 + self.d0
                return True
        return False

    def arrive_together(self, ids: list[int], t: float) -> bool:
        """Several requests join WAITING at the same instant (before the engine looks at any of them)."""
        if not ids:
            return False
        self.waiting.extend(ids[:-1])
        return self.arrive(ids[-1], t)

    def abort(self, j: int, t: float) -> bool:
        """The client of request j went away at t: vLLM's `finish_requests(..., FINISHED_ABORTED)` frees its
        blocks and removes it from WAITING or RUNNING; the step in flight ends as planned (without j's
        chunk) and the next one is scheduled without it. False if j is not here (finished)."""
        if j in self.dec:
            self.sync(t)
            self._leave_dec(j)
        elif j in self.pf:
            self.pf.remove(j)
            self._release_prefill(j)
            self.chunks = [c for c in self.chunks if c[0] != j]
        elif j in self.waiting:
            self.waiting.remove(j)
            return True
        else:
            return False
        if self.mode == RUN and self.k > 1:  # the freed room counts from the next step on
            self.k = 1
            self.end = self.t0 + self.d0
        return True

    def event(self, t: float) -> None:
        """The step or run in flight ends at t: apply it, then schedule the next step."""
        book = self.book
        if self.mode == RUN:
            if self.k:
                self._apply_run(self.k)
            self._complete(t)
        else:
            chunks = self.chunks
            self.chunks = []
            b = self.b
            if b:
                self.v += 1
                self.gen += b
                book.gen_total += b
                if self.detail:
                    self.itl_h.observe(self.end - self.t0, b)
                self._complete(t)
            for j, start, n in chunks:
                self._chunk_done(j, start + n, t)
        self._schedule(t)

    # ---- step end ----------------------------------------------------------------------------------
    def _complete(self, t: float) -> None:
        heap, dec, v = self.heap, self.dec, self.v
        done_v = self.book.done_v
        while heap and heap[0][0] <= v:
            dv, j = heapq.heappop(heap)
            if j in dec and done_v[j] == dv:
                self._leave_dec(j)
                self.book.emitted[j] = self.book.out[j]
                self._finish(j, t)

    def _chunk_done(self, j: int, computed: int, t: float) -> None:
        book = self.book
        book.computed[j] = computed
        if computed < book.prompt[j] + book.emitted[j]:
            return  # still in prefill (the tail of RUNNING)
        # prefill done: this step samples a token
        self.pf.remove(j)
        e = book.emitted[j] + 1
        book.emitted[j] = e
        self.gen += 1
        book.gen_total += 1
        if e == 1:
            ttft = t - book.arr[j]
            book.ttft[j] = ttft
            p = book.prompt[j]
            self.prompt_tok += p
            book.prompt_total += p
            th = book.ttft_h
            th.counts[bisect_left(th.bounds, ttft)] += 1
            th.sum += ttft
            th.count += 1
            if self.detail:
                self.ttft_h.observe(ttft)
        if book.hashes is not None:
            r = self._register(j)
            book.held[j] -= r
            self.P -= r
        if e >= book.out[j]:
            self._release_prefill(j)
            self._finish(j, t)
            return
        # decoding from now on: its private blocks are counted from computed = base + v
        self.P -= book.held[j]
        book.held[j] = 0
        v = self.v
        base = computed - v
        book.base[j] = base
        dv = v + book.out[j] - e
        book.done_v[j] = dv
        self.dec[j] = None
        self.b += 1
        bs = self.bs
        self.phase[base % bs] += 1
        self.Q += base // bs
        self.SB += base
        self.KD += book.kref[j]
        heapq.heappush(self.heap, (dv, j))

    def _leave_dec(self, j: int) -> None:
        book = self.book
        del self.dec[j]
        self.b -= 1
        base = book.base[j]
        bs = self.bs
        self.phase[base % bs] -= 1
        self.Q -= base // bs
        self.SB -= base
        self.KD -= book.kref[j]
        if book.kref[j]:
            self._unref(j)

    def _release_prefill(self, j: int) -> None:
        book = self.book
        self.P -= book.held[j]
        book.held[j] = 0
        if book.kref[j]:
            self._unref(j)

    def _finish(self, j: int, t: float) -> None:
        book = self.book
        self.success += 1
        book.success_total += 1
        slot = self.slot
        if slot >= 0:
            book.loads[slot] -= 1
        qt = book.qt[j]
        qh = book.queue_h
        qh.counts[bisect_left(qh.bounds, qt)] += 1
        qh.sum += qt
        qh.count += 1
        if self.detail:
            self.queue_h.observe(qt)
            self.e2e_h.observe(t - book.arr[j])
            self.prompt_h.observe(book.prompt[j])

    # ---- prefix cache --------------------------------------------------------------------------------
    def _hits(self, j: int, tokens: int) -> tuple[int, int]:
        """(cached full blocks at the head of request j's prompt, how many of them nobody holds now)."""
        hashes = self.book.hashes
        assert hashes is not None
        hs = hashes[j]
        cache = self.cache
        limit = min(len(hs), (tokens - 1) // self.bs)
        n = idle = 0
        while n < limit:
            refs = cache.get(hs[n])
            if refs is None:
                break
            if refs == 0:
                idle += 1
            n += 1
        return n, idle

    def _ref(self, j: int, n: int) -> None:
        hs = self.book.hashes[j]  # type: ignore[index]
        cache, lru = self.cache, self.lru
        for h in hs[:n]:
            refs = cache[h]
            if refs == 0:
                del lru[h]
                self.E += 1
            cache[h] = refs + 1
        self.book.kref[j] = n

    def _register(self, j: int) -> int:
        """After its prefill, request j's full prompt blocks become cache entries (held by j). Returns how many
        of its private blocks became entries."""
        book = self.book
        hs = book.hashes[j]  # type: ignore[index]
        k0 = k = book.kref[j]
        full = min(len(hs), book.prompt[j] // self.bs)
        cache = self.cache
        while k < full:
            h = hs[k]
            if h in cache:  # the same block computed twice at once: vLLM keeps one copy; here j keeps its own
                break
            cache[h] = 1
            self.E += 1
            k += 1
        book.kref[j] = k
        return k - k0

    def _unref(self, j: int) -> None:
        book = self.book
        hs = book.hashes[j]  # type: ignore[index]
        cache, lru = self.cache, self.lru
        for h in hs[:book.kref[j]]:
            refs = cache[h] - 1
            cache[h] = refs
            if refs == 0:
                self.E -= 1
                lru[h] = None
        book.kref[j] = 0

    def _evict_to(self, free: int) -> None:
        """Cached blocks nobody holds live in the free blocks: evict the least recently freed beyond `free`."""
        lru = self.lru
        while len(lru) > free:
            h, _ = lru.popitem(last=False)
            del self.cache[h]

    # ---- scheduling ----------------------------------------------------------------------------------
    def _preempt(self, j: int, t: float) -> None:
        """Recompute preemption: blocks freed, back to the head of WAITING."""
        book = self.book
        if j in self.dec:
            self._leave_dec(j)
        else:
            self.pf.remove(j)
            self._release_prefill(j)
        book.computed[j] = 0
        self.waiting.appendleft(j)
        self.preemptions += 1
        book.preempt_total += 1

    def _schedule(self, t: float) -> None:
        """`Scheduler.schedule()` at a step boundary t: decide the next step, or go idle. As vLLM's: the
        RUNNING requests first (decodes take their block, `_decode_room`; then the prefills, in order,
        `_continue_prefills`), then, if nothing was preempted, WAITING requests while budget and blocks last
        (`_admit`)."""
        free, exact, preempted = self._decode_room(t)
        chunks: list[tuple[int, int, int]] = []
        free, exact, budget, preempted_now = self._continue_prefills(t, free, exact, self.B - self.b, chunks)
        preempted = preempted or preempted_now
        if not preempted and self.waiting:
            free, exact = self._admit(t, free, exact, budget, chunks)
        self._start(t, chunks, free, exact, preempted)

    def _decode_room(self, t: float) -> tuple[int, bool, bool]:
        """Free blocks after this step's decode allocations, whether that count is exact, and whether decodes
        had to preempt for their blocks. A cheap lower bound first (every decoding request's last block
        counted as full); the exact count only when a decision depends on it."""
        v, bs, b = self.v, self.bs, self.b
        if b:
            need_dec = self.phase[(-v) % bs]
            exact = self.book.hashes is not None
            if exact:
                free = self.total_blocks - self._held_dec(v) - self.P - self.E - need_dec
            else:
                free = self.total_blocks - (self.SB + b * (v + bs - 1)) // bs - self.P - self.E - need_dec
        else:
            need_dec = 0
            exact = True
            free = self.total_blocks - self.P - self.E
        if free < 0 and not exact:
            free = self.total_blocks - self._held_dec(v) - self.P - self.E - need_dec
            exact = True
        if free < 0:
            return self._preempt_for_decodes(t), exact, True
        return free, exact, False

    def _continue_prefills(self, t: float, free: int, exact: bool, budget: int,
                           chunks: list[tuple[int, int, int]]) -> tuple[int, bool, int, bool]:
        """RUNNING requests still in prefill (the tail, in order) take their next chunk, appended to `chunks`;
        when one's blocks do not fit, the last of RUNNING is preempted until they do. Returns free blocks,
        exactness, the budget left and whether anything was preempted."""
        if not self.pf:
            return free, exact, budget, False
        book, bs, v = self.book, self.bs, self.v
        computed, held = book.computed, book.held
        preempted = False
        for j in list(self.pf):
            if j not in self.pf:
                continue  # preempted for one ahead of it
            c = computed[j]
            n = book.prompt[j] + book.emitted[j] - c
            if n > budget:
                n = budget
            if n <= 0:
                break
            need = -(-(c + n) // bs) - book.kref[j] - held[j]
            if need > free and not exact:
                free += self._held_bound_gap(v)
                exact = True
            while need > free:
                # the last of RUNNING is preempted until it fits, possibly this request itself
                victim = self.pf[-1]
                used = self.P + self.E
                self._preempt(victim, t)
                free += used - self.P - self.E
                preempted = True
                if victim == j:
                    break
            if j not in self.pf:
                break
            free -= need
            held[j] += need
            self.P += need
            chunks.append((j, c, n))
            budget -= n
        return free, exact, budget, preempted

    def _admit(self, t: float, free: int, exact: bool, budget: int,
               chunks: list[tuple[int, int, int]]) -> tuple[int, bool]:
        """WAITING requests in FCFS order while the budget lasts, fewer than `max_num_seqs` run and their
        blocks fit (a cached prefix is not recomputed); each joins RUNNING with its first chunk in `chunks`.
        Returns free blocks and exactness."""
        book, bs, v = self.book, self.bs, self.v
        hashes, computed, held = book.hashes, book.computed, book.held
        waiting = self.waiting
        running = self.b + len(self.pf)
        prompt, emitted, qt, arr = book.prompt, book.emitted, book.qt, book.arr
        while waiting and budget > 0 and running < self.max_seqs:
            j = waiting[0]
            if hashes is not None:
                self._evict_to(free)
            tokens = prompt[j] + emitted[j]
            hit = idle_hits = 0
            if hashes is not None:
                hit, idle_hits = self._hits(j, tokens)
            start = hit * bs
            n = tokens - start
            if n > budget:
                n = budget
            need = -(-(start + n) // bs) - hit
            if need + idle_hits > free:
                if exact:
                    break
                free += self._held_bound_gap(v)
                exact = True
                if need + idle_hits > free:
                    break
            waiting.popleft()
            if hit:
                self._ref(j, hit)
            free -= need + idle_hits
            computed[j] = start
            held[j] = need
            self.P += need
            if qt[j] != qt[j]:  # first scheduled (nan until then)
                qt[j] = t - arr[j]
            self.pf.append(j)
            chunks.append((j, start, n))
            budget -= n
            running += 1
        return free, exact

    def _start(self, t: float, chunks: list[tuple[int, int, int]], free: int, exact: bool, preempted: bool) -> None:
        """The step decided: one with prefill chunks, idle, or a run of identical decode-only steps until the
        next completion or the blocks run out (one step after a preemption)."""
        b, v, cost = self.b, self.v, self.cost
        if chunks:
            self.mode = MIXED
            self.chunks = chunks
            self.t0 = t
            self.end = t + cost.step(b, self.SB + b * (v + 1), chunks)
            return
        if not b:
            self.mode = IDLE
            return
        heap, dec, done_v = self.heap, self.dec, self.book.done_v
        while heap and (heap[0][1] not in dec or done_v[heap[0][1]] != heap[0][0]):
            heapq.heappop(heap)
        k = heap[0][0] - v
        if preempted:
            k = 1
        elif k > 1 and free < b * (k // self.bs + 1):
            # steps j = 0..k-1 need blocks for base + v + j + 1 tokens; all must fit in what is free now
            if not exact:
                free += self._held_bound_gap(v)
            if free < b * (k // self.bs + 1):
                k = self._steps_that_fit(v, free + self._held_dec(v + 1), k)
        self.mode = RUN
        self.t0 = t
        self.d0 = cost.base + b * cost.per_decode + (self.SB + b * (v + 1)) * cost.kv_read
        self.slope = b * cost.kv_read
        self.k = k
        self.end = t + k * self.d0 + self.slope * k * (k - 1) * 0.5

    def _held_bound_gap(self, v: int) -> int:
        """How much the bound `_schedule` starts from overstates the blocks the decodes hold (≥ 0)."""
        b = self.b
        if not b:
            return 0
        return (self.SB + b * (v + self.bs - 1)) // self.bs - self.KD - self._held_dec(v)

    def _steps_that_fit(self, v: int, limit: int, k: int) -> int:
        """Largest m ≤ k (≥ 1) with the blocks for steps 0..m-1 within `limit` (= held after step 0 + free)."""
        lo, hi = 1, k
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._held_dec(v + mid) <= limit:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _preempt_for_decodes(self, t: float) -> int:
        """The slow path of the RUNNING loop: decodes in order take their block; when one cannot, the last of
        RUNNING is preempted (the requests in prefill first, then the newest decodes). Returns free blocks
        left after this step's decode allocations."""
        bs = self.bs
        v = self.v
        book = self.book
        free = self.total_blocks - self._held_dec(v) - self.P - self.E
        order = list(self.dec)
        i = 0
        while i < len(order):
            j = order[i]
            need = 1 if (book.base[j] + v) % bs == 0 else 0
            while need > free:
                victim = self.pf[-1] if self.pf else order.pop()
                before = self.total_blocks - self._held_dec(v) - self.P - self.E
                self._preempt(victim, t)
                after = self.total_blocks - self._held_dec(v) - self.P - self.E
                free += after - before
                if victim == j:
                    break
            else:
                free -= need
                i += 1
                continue
            break
        return free


def _steps_within(span: float, d0: float, s: float, cap: int) -> int:
    """Complete steps of a run (step k lasts d0 + k·s) that fit in `span`, at most `cap`."""
    if cap <= 0 or span < d0:
        return 0
    if s <= 0:
        k = int(span / d0)
    else:
        a = d0 - 0.5 * s
        k = int((-a + math.sqrt(a * a + 2.0 * s * span)) / s)
    while k > 0 and k * d0 + s * k * (k - 1) * 0.5 > span:
        k -= 1
    while k < cap and (k + 1) * d0 + s * (k + 1) * k * 0.5 <= span:
        k += 1
    return min(k, cap)
