"""The simulated replica behind the emulator's OpenAI-compatible API: one interface, one adapter.

`ReplicaModel` is everything `autoscaler.emulator.openai` needs from a replica's timing model; swapping
the model means writing another class with these three methods and changing `default_replica_model`
below, nothing else.

`EngineReplica` is the simulated fleet's own replica: one `simulations.engine_step.Engine` (vLLM V1's
scheduler step by step: token budget, chunked prefill, WAITING/RUNNING, KV blocks, preemption;
docs/vllm-replica-model.md), the same code `simulations.fleet.RequestFleet` runs per replica, fed
requests one at a time as they arrive instead of from a trace. The adapter only moves the engine's time:
before an arrival at t it applies the engine's events that end before t (arrivals go first at equal
times, as in the fleet); a read at t applies those that end by t. It reads a request's tokens off the
engine's book (a decoding request has `base + v − prompt + 1` tokens out; `Engine` keeps `base + v` =
its computed tokens). An aborted request is removed from the engine (`Engine.abort`, vLLM's
`finish_requests`). tests/unit/profile/test_replica_model.py checks first-token times against
`RequestFleet` on the same requests.

Times are simulated seconds; `now` never goes backward (an earlier `now` is treated as the last one).
When the engine is idle and empty, it is replaced by a fresh one, so a long-running emulator does not
keep every request it ever served.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from simulations.engine_step import RUN, Book, Engine

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Progress:
    """A request as of `now`: tokens out so far, and the earliest time its next token can be out (it may
    turn out later: arrivals slow decode; None: not known, ask again soon)."""

    emitted: int
    output_tokens: int
    first_token_at: float | None
    next_token_at: float | None

    @property
    def done(self) -> bool:
        return self.emitted >= self.output_tokens


class ReplicaModel(Protocol):
    def submit(self, prompt_tokens: int, output_tokens: int, now: float) -> int:
        """A request arrives at `now`; returns its id."""
        ...

    def progress(self, rid: int, now: float) -> Progress: ...

    def abort(self, rid: int, now: float) -> None:
        """The client went away: free the request's slot and KV (as vLLM does on disconnect)."""
        ...


class EngineReplica:
    """One replica of `simulations.fleet.RequestFleet` (its `Engine`), fed request by request."""

    def __init__(self, serving: Any) -> None:
        self.serving = serving
        self.max_model_len = int(serving.kv_cache_tokens)
        self.t = 0.0
        self.done: dict[int, tuple[int, float | None]] = {}  # finished before a reset, or aborted
        self._live: set[int] = set()  # ids submitted and not yet forgotten or aborted
        self._offset = 0  # id = offset + index in the current engine's book
        self._fresh()

    def _fresh(self) -> None:
        self.book = Book([], [], [], None, [])
        self.engine = Engine(self.serving, self.book, None, "ready", False)

    # ---- the interface --------------------------------------------------------------------------
    def submit(self, prompt_tokens: int, output_tokens: int, now: float) -> int:
        if prompt_tokens < 1 or output_tokens < 1:
            raise ValueError("prompt_tokens and output_tokens must be ≥ 1")
        self._advance(now, arriving=True)
        if self.engine.idle and not self.engine.busy_with_work() and self.book.arr:
            self._reset()
        i = self.book.add(self.t, prompt_tokens, output_tokens)
        self.engine.arrive(i, self.t)
        rid = self._offset + i
        self._live.add(rid)
        return rid

    def progress(self, rid: int, now: float) -> Progress:
        self._advance(now)
        if rid in self.done:
            n, first = self.done[rid]
            return Progress(n, n, first, None)
        i = rid - self._offset
        if rid not in self._live or i < 0:
            raise KeyError(f"no request {rid}")
        book, eng = self.book, self.engine
        out = book.out[i]
        ttft = book.ttft[i]
        first = None if ttft != ttft else book.arr[i] + ttft
        if i in eng.dec:  # decoding: computed tokens = base + v, one more sampled
            eng.sync(self.t)
            emitted = min(out, book.base[i] + eng.v - book.prompt[i] + 1)
        else:
            emitted = book.emitted[i]
        if emitted >= out:
            return Progress(out, out, first, None)
        if not eng.mode:
            return Progress(emitted, out, first, None)
        # the step in flight ends at t0 + d0 in a run of decode steps, else at `end` (a nanosecond later, so
        # that a read then sees it despite rounding)
        nxt = eng.t0 + eng.d0 if i in eng.dec and eng.mode == RUN else eng.end
        return Progress(emitted, out, first, nxt + _EPS)

    def abort(self, rid: int, now: float) -> None:
        self._advance(now)
        if rid not in self._live:
            return
        self._live.discard(rid)
        i = rid - self._offset
        if i >= 0:
            self.engine.abort(i, self.t)
        self.done.pop(rid, None)

    def forget(self, rid: int) -> None:
        """Drop the record of a finished request (the server calls this once it has answered)."""
        self.done.pop(rid, None)
        self._live.discard(rid)

    # ---- time -----------------------------------------------------------------------------------
    def _advance(self, now: float, arriving: bool = False) -> None:
        """Apply the engine's events up to `now` (those ending at `now` too, unless a request arrives then:
        the fleet takes arrivals first)."""
        t = max(self.t, now)
        eng = self.engine
        while eng.mode and (eng.end < t or (eng.end == t and not arriving)):
            eng.event(eng.end)
        self.t = t

    def _reset(self) -> None:
        """The engine is idle and empty: keep what the live ids got, start a fresh engine."""
        book, n = self.book, len(self.book.arr)
        for rid in self._live:
            i = rid - self._offset
            if 0 <= i < n:
                ttft = book.ttft[i]
                self.done[rid] = (book.emitted[i], None if ttft != ttft else book.arr[i] + ttft)
        self._live.clear()
        self._offset += n
        self._fresh()


def default_replica_model(serving: Any = None) -> EngineReplica:
    """The replica model the emulator serves (the one place to swap it)."""
    if serving is None:
        from simulations.profiles import ServingProfile

        serving = ServingProfile()
    return EngineReplica(serving)
