"""The simulated replica behind the emulator's OpenAI-compatible API: one interface, one adapter.

`ReplicaModel` is everything `autoscaler.emulator.openai` needs from a replica's timing model; swapping
the model (e.g. for an engine-step model of vLLM V1's scheduler) means writing another class with these
three methods and changing `default_replica_model` below, nothing else.

`ServingProfileReplica` is today's model: `simulations.profiles.ServingProfile` with the per-replica rules
of `simulations.fleet.RequestFleet`, made incremental (requests arrive live, not from a trace):
- a request is admitted (FCFS) while the replica has a sequence slot (`max_num_seqs`) and KV room for
  prompt + output tokens, reserved at admission (an empty replica admits anything);
- admitted requests are prefilled one at a time at `prefill_tokens_per_second`; decode pauses while a
  prefill runs. The first token is out when its prefill ends;
- every decoding sequence gets one token per step; a step takes `itl(batch)`; a virtual token clock `v`
  counts steps, so token k of a request whose first token came at v0 is out when v reaches v0 + k.
tests/unit/profile/test_replica_model.py checks its first-token times against `RequestFleet` itself.
Times are simulated seconds; `now` never goes backward (an earlier `now` is treated as the last one).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

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


class _Req:
    __slots__ = ("arrival", "first_at", "out", "prompt", "v0")

    def __init__(self, prompt: int, out: int, arrival: float) -> None:
        self.prompt, self.out, self.arrival = prompt, out, arrival
        self.first_at: float | None = None
        self.v0 = 0.0


class ServingProfileReplica:
    """One replica of `simulations.fleet.RequestFleet`, fed request by request."""

    def __init__(self, serving: Any) -> None:
        self.rate = float(serving.prefill_tokens_per_second)
        self.itl_a = float(serving.itl_base_seconds)
        self.itl_b = float(serving.itl_per_sequence_seconds)
        self.max_seqs = int(serving.max_num_seqs)
        self.kv_cap = int(serving.kv_cache_tokens)
        self.max_model_len = self.kv_cap
        self.t = 0.0
        self.v = 0.0
        self.kv_used = 0
        self.waiting: deque[int] = deque()
        self.pf: deque[int] = deque()
        self.pf_end: float | None = None
        self.dec: list[tuple[float, int]] = []  # (v at its last token, id)
        self.reqs: dict[int, _Req] = {}
        self.done: dict[int, int] = {}  # finished or aborted id -> tokens it got
        self._next_id = 0

    # ---- the interface --------------------------------------------------------------------------
    def submit(self, prompt_tokens: int, output_tokens: int, now: float) -> int:
        if prompt_tokens < 1 or output_tokens < 1:
            raise ValueError("prompt_tokens and output_tokens must be ≥ 1")
        self._advance(now)
        rid = self._next_id
        self._next_id += 1
        self.reqs[rid] = _Req(prompt_tokens, output_tokens, self.t)
        self.waiting.append(rid)
        self._admit()
        self._start_prefill()
        return rid

    def progress(self, rid: int, now: float) -> Progress:
        self._advance(now)
        if rid in self.done:
            n = self.done[rid]
            return Progress(n, n, None, None)
        r = self.reqs[rid]
        if r.first_at is None:  # nothing about it changes before the replica's next event
            return Progress(0, r.out, None, self._next_event())
        k = 1 + int(self.v - r.v0 + 1e-6)
        emitted = min(r.out, k)
        if self.pf:  # decode pauses while a prefill runs
            return Progress(emitted, r.out, r.first_at, self.pf_end)
        nxt = self.t + max(0.0, r.v0 + emitted - self.v) * self._itl()
        return Progress(emitted, r.out, r.first_at, nxt)

    def abort(self, rid: int, now: float) -> None:
        self._advance(now)
        r = self.reqs.pop(rid, None)
        if r is None:
            return
        if rid in self.waiting:
            self.waiting.remove(rid)
            self.done[rid] = 0
            return
        self.kv_used -= r.prompt + r.out
        if rid in self.pf:
            head = self.pf[0] == rid
            self.pf.remove(rid)
            if head:
                self.pf_end = None
        else:
            self.dec = [e for e in self.dec if e[1] != rid]
            heapq.heapify(self.dec)
        self.done[rid] = 0
        self._admit()
        self._start_prefill()

    def forget(self, rid: int) -> None:
        """Drop the record of a finished request (the server calls this once it has answered)."""
        self.done.pop(rid, None)

    # ---- the serving rules (as in simulations.fleet) -------------------------------------------
    def _itl(self) -> float:
        return self.itl_a + self.itl_b * len(self.dec)

    def _sync(self, t: float) -> None:
        if self.dec and not self.pf and t > self.t:
            self.v += (t - self.t) / self._itl()
        self.t = max(self.t, t)

    def _next_event(self) -> float | None:
        if self.pf:
            return self.pf_end
        if self.dec:
            return self.t + max(0.0, self.dec[0][0] - self.v) * self._itl()
        return None

    def _advance(self, now: float) -> None:
        while True:
            te = self._next_event()
            if te is None or te > now:
                break
            self._sync(te)
            if self.pf:
                rid = self.pf.popleft()
                self.pf_end = None
                r = self.reqs[rid]
                r.first_at = te
                r.v0 = self.v
                if r.out > 1:
                    heapq.heappush(self.dec, (self.v + r.out - 1, rid))
                else:
                    self._finish(rid)
            else:
                v_done = self.v + 1e-6
                while self.dec and self.dec[0][0] <= v_done:
                    self._finish(heapq.heappop(self.dec)[1])
            self._admit()
            self._start_prefill()
        self._sync(now)

    def _finish(self, rid: int) -> None:
        r = self.reqs.pop(rid)
        self.kv_used -= r.prompt + r.out
        self.done[rid] = r.out

    def _admit(self) -> None:
        while self.waiting and len(self.pf) + len(self.dec) < self.max_seqs:
            r = self.reqs[self.waiting[0]]
            need = r.prompt + r.out
            if self.kv_used + need > self.kv_cap and (self.pf or self.dec):
                break
            self.pf.append(self.waiting.popleft())
            self.kv_used += need

    def _start_prefill(self) -> None:
        if self.pf and self.pf_end is None:
            self.pf_end = self.t + self.reqs[self.pf[0]].prompt / self.rate


def default_replica_model(serving: Any = None) -> ServingProfileReplica:
    """The replica model the emulator serves (the one place to swap it)."""
    if serving is None:
        from simulations.profiles import ServingProfile

        serving = ServingProfile()
    return ServingProfileReplica(serving)
