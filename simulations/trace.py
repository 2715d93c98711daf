"""The in-memory workload forms every loader produces and every fleet consumes.

- `Trace`: one row per request (arrival seconds from the start, prompt tokens, output tokens), sorted;
  for the request-level fleet.
- `BinnedWorkload`: arrivals and token work per fixed bin (e.g. 1 s), plus a sample of prompt and
  output lengths for latency distributions; for the fluid fleet and multi-day traces.

Scaling: `clone` repeats each request k times at the same timestamp (jitter ≤ 100 ms), which keeps the
burst shape (protocol §1); `BinnedWorkload.scaled` multiplies the rate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from simulations.errors import SimulationInputError

MAX_CLONE_JITTER_SECONDS = 0.1
# A trace cloned or rate-scaled at most this many times: an Azure hour × 1000 is 20 million requests, what a
# request-level replay can hold (the scenario's `clone`/`rate_factor` and emulate's --scale share it).
MAX_CLONE = 1000.0


@dataclass(frozen=True)
class Trace:
    name: str
    arrival_s: np.ndarray  # float64, non-decreasing, first ≥ 0
    prompt_tokens: np.ndarray  # int64 ≥ 1
    output_tokens: np.ndarray  # int64 ≥ 1
    start_epoch: float  # unix seconds of t = 0 (used for time-of-day floors)
    # Per request, the hashes of its prompt's full KV blocks in order (Mooncake `hash_ids`): equal hashes at
    # the head of two prompts mean a shared prefix, which vLLM's prefix cache does not recompute. None: the
    # trace carries none (no prefix caching is simulated).
    block_hashes: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        n = len(self.arrival_s)
        if n == 0:
            raise SimulationInputError(self.name, "", "the trace has no requests",
                                       "pass a trace with at least one request")
        if len(self.prompt_tokens) != n or len(self.output_tokens) != n:
            raise SimulationInputError(self.name, "", "column lengths differ", "give one value per request")
        if np.any(np.diff(self.arrival_s) < 0):
            i = int(np.argmax(np.diff(self.arrival_s) < 0)) + 1
            raise SimulationInputError(self.name, "arrival", f"request {i} arrives before request {i - 1}",
                                       "sort the trace by timestamp")
        if self.block_hashes is not None and len(self.block_hashes) != n:
            raise SimulationInputError(self.name, "hash_ids", "one list of block hashes per request is needed",
                                       "give every request its hash_ids (may be empty) or none at all")

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def duration_seconds(self) -> float:
        return float(self.arrival_s[-1]) if len(self.arrival_s) else 0.0

    def clone(self, k: float, seed: int = 0) -> Trace:
        """Each request k times (k may be fractional: the remainder is a per-request coin flip), copies
        at the original timestamp plus uniform jitter in [0, 100 ms]. The burst shape is kept."""
        if not 0 < k <= MAX_CLONE:
            raise SimulationInputError(self.name, "scale", f"clone factor {k} must be within (0, {MAX_CLONE:g}]",
                                       "use e.g. --scale 8")
        if k == 1:
            return self
        rng = np.random.default_rng(seed)
        n = len(self)
        whole = int(np.floor(k))
        reps = np.full(n, whole, dtype=np.int64)
        if k - whole > 0:
            reps += rng.random(n) < (k - whole)
        idx = np.repeat(np.arange(n), reps)
        if len(idx) == 0:
            raise SimulationInputError(self.name, "scale", f"clone factor {k} left no request", "use a larger k")
        first = np.zeros(len(idx), dtype=bool)
        first[(np.cumsum(reps) - reps)[reps > 0]] = True  # the original keeps its timestamp
        jitter = np.where(first, 0.0, rng.uniform(0.0, MAX_CLONE_JITTER_SECONDS, len(idx)))
        t = self.arrival_s[idx] + jitter
        order = np.argsort(t, kind="stable")
        hashes = None
        if self.block_hashes is not None:
            src = idx[order].tolist()
            hashes = tuple(self.block_hashes[j] for j in src)
        return Trace(f"{self.name}×{k:g}", t[order], self.prompt_tokens[idx][order],
                     self.output_tokens[idx][order], self.start_epoch, hashes)

    def window(self, start_s: float, end_s: float) -> Trace:
        """Requests with start ≤ arrival < end, re-based to start at 0."""
        lo, hi = np.searchsorted(self.arrival_s, [start_s, end_s])
        hashes = self.block_hashes[lo:hi] if self.block_hashes is not None else None
        return Trace(self.name, self.arrival_s[lo:hi] - start_s, self.prompt_tokens[lo:hi],
                     self.output_tokens[lo:hi], self.start_epoch + start_s, hashes)

    def binned(self, bin_seconds: float = 1.0) -> BinnedWorkload:
        nbins = int(np.floor(self.duration_seconds / bin_seconds)) + 1
        b = np.minimum((self.arrival_s / bin_seconds).astype(np.int64), nbins - 1)
        return BinnedWorkload(
            name=self.name,
            bin_seconds=bin_seconds,
            counts=np.bincount(b, minlength=nbins).astype(np.float64),
            prompt_tokens=np.bincount(b, weights=self.prompt_tokens, minlength=nbins),
            output_tokens=np.bincount(b, weights=self.output_tokens, minlength=nbins),
            prompt_sample=np.sort(self.prompt_tokens.astype(np.float64)),
            output_sample=np.sort(self.output_tokens.astype(np.float64)),
            start_epoch=self.start_epoch,
        )


@dataclass(frozen=True)
class BinnedWorkload:
    name: str
    bin_seconds: float
    counts: np.ndarray  # requests arriving per bin (float: a scaled rate need not be whole)
    prompt_tokens: np.ndarray  # prompt tokens arriving per bin
    output_tokens: np.ndarray  # output tokens arriving per bin
    prompt_sample: np.ndarray  # sorted prompt lengths: the per-request distribution
    output_sample: np.ndarray  # sorted output lengths
    start_epoch: float

    def __post_init__(self) -> None:
        if len(self.counts) == 0 or float(self.counts.sum()) <= 0:
            raise SimulationInputError(self.name, "", "the workload has no requests",
                                       "pass a trace with at least one request")
        if not (len(self.counts) == len(self.prompt_tokens) == len(self.output_tokens)):
            raise SimulationInputError(self.name, "", "bin arrays differ in length", "build bins together")
        if np.any(self.counts < 0) or not np.all(np.isfinite(self.counts)):
            raise SimulationInputError(self.name, "rate", "negative or non-finite rate", "fix the rate data")
        # A request without a prompt token is never scheduled by the fluid fleet (it prefills in prompt-token
        # order), so it would report queueing on an idle fleet.
        short = (self.counts > 0) & ~(self.prompt_tokens >= self.counts * (1.0 - 1e-9))
        if np.any(short):
            b = int(np.argmax(short))
            raise SimulationInputError(self.name, "prompt_tokens", f"bin {b} holds {self.counts[b]:g} requests but "
                                       f"{self.prompt_tokens[b]:g} prompt tokens",
                                       "give every request at least one prompt token")

    @property
    def duration_seconds(self) -> float:
        return len(self.counts) * self.bin_seconds

    @property
    def total_requests(self) -> float:
        return float(self.counts.sum())

    def scaled(self, factor: float) -> BinnedWorkload:
        if not factor > 0:
            raise SimulationInputError(self.name, "scale", f"rate factor {factor} must be > 0", "use e.g. 0.3")
        return replace(self, name=f"{self.name}×{factor:g}", counts=self.counts * factor,
                       prompt_tokens=self.prompt_tokens * factor, output_tokens=self.output_tokens * factor)

    def skip(self, seconds: float, where: str = "") -> BinnedWorkload:
        """The bins after the first `seconds`, the clock (`start_epoch`) moved on by as much."""
        n = int(seconds / self.bin_seconds)
        if n >= len(self.counts) or not float(self.counts[n:].sum()) > 0:
            raise SimulationInputError(where or self.name, "trace.start_seconds",
                                       f"nothing arrives after {seconds:g} s",
                                       f"start before the trace's end ({self.duration_seconds:g} s)")
        return replace(self, counts=self.counts[n:], prompt_tokens=self.prompt_tokens[n:],
                       output_tokens=self.output_tokens[n:], start_epoch=self.start_epoch + n * self.bin_seconds)

    def head(self, seconds: float) -> BinnedWorkload:
        n = max(1, int(seconds / self.bin_seconds))
        return replace(self, counts=self.counts[:n], prompt_tokens=self.prompt_tokens[:n],
                       output_tokens=self.output_tokens[:n])


# Bins with fewer requests than this get the sum of that many real (prompt, output) pairs drawn from the
# token source; from here on the normal approximation of the sum holds (the Azure conv lengths' standard
# deviation is about their mean, so the sum of 32 is 5.7 standard deviations above zero).
EXACT_TOKEN_SUMS_BELOW = 32


def token_sums(counts: np.ndarray, source: Trace, rng: np.random.Generator,
               exact_rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Prompt and output token sums per bin: `rng` draws the normal approximation's z for every bin (so the
    large bins' sums do not depend on how many small ones there are), `exact_rng` the real lengths of the
    small ones. A bin of a few requests gets the sum of real lengths: the normal
    approximation n·mean + sqrt(n)·sd·z of a heavy-tailed length is often ≤ 0 for n of 1-3, and a bin whose
    requests carry no prompt tokens is never scheduled by the fluid fleet, which then reports an idle fleet
    queueing for tens of seconds (servegen-mid day 10's collection gap: 202 such bins, queue times up to
    35 s on 20 idle replicas). Every request carries at least one token of each."""
    out = []
    for col in (source.prompt_tokens, source.output_tokens):
        mean, sd = float(np.mean(col)), float(np.std(col))
        z = rng.standard_normal(len(counts))
        out.append(np.maximum(counts, counts * mean + np.sqrt(counts) * sd * z))
    few = np.nonzero((counts > 0) & (counts < EXACT_TOKEN_SUMS_BELOW))[0]
    if len(few):
        n = np.rint(counts[few]).astype(np.int64)
        picks = exact_rng.integers(0, len(source.prompt_tokens), int(n.sum()))
        bins = np.repeat(np.arange(len(few)), n)
        scale = counts[few] / np.maximum(n, 1)  # a fractional count keeps its rate
        for sums, col in zip(out, (source.prompt_tokens, source.output_tokens), strict=True):
            drawn = np.bincount(bins, weights=np.maximum(1, col[picks]).astype(np.float64), minlength=len(few))
            sums[few] = np.where(n > 0, drawn * scale, sums[few])
    return out[0], out[1]
