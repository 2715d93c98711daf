"""Synthetic workload shapes (docs/benchmark-protocol.md §1): a flash crowd (step burst) and a diurnal pattern.

Token lengths are resampled (seeded, with replacement) from a real trace (the Azure conv trace by
default), so synthetic load has real prompt/output mixes.
"""

from __future__ import annotations

import numpy as np

from simulations.trace import BinnedWorkload, Trace, token_sums

MONDAY_2024 = 1704067200.0  # 2024-01-01 00:00 UTC


def flash_crowd_trace(tokens: Trace, base_rps: float, factor: float, start_s: float, ramp_s: float,
                      hold_s: float, duration_s: float, seed: int) -> Trace:
    """Poisson arrivals at `base_rps`; from `start_s` the rate ramps to `factor ×` within `ramp_s`, holds
    for `hold_s`, and ramps back down as fast."""
    rng = np.random.default_rng(seed)
    edges = np.arange(0.0, duration_s + 1.0, 1.0)
    t_mid = edges[:-1] + 0.5
    up = np.clip((t_mid - start_s) / max(ramp_s, 1e-9), 0, 1)
    down = np.clip((t_mid - start_s - ramp_s - hold_s) / max(ramp_s, 1e-9), 0, 1)
    rate = base_rps * (1 + (factor - 1) * (up - down))
    counts = rng.poisson(rate)
    t = np.repeat(edges[:-1], counts) + rng.random(int(counts.sum()))
    t.sort()
    pick = rng.integers(0, len(tokens), len(t))
    return Trace("flash-crowd", t, tokens.prompt_tokens[pick], tokens.output_tokens[pick], MONDAY_2024)


def diurnal_workload(tokens: Trace, mean_rps: float, peak_to_trough: float, noise_sigma: float,
                     duration_s: float, bin_seconds: float, seed: int) -> BinnedWorkload:
    """A daily sine with the given peak/trough ratio (trough at 04:00, peak at 16:00 UTC), times
    per-minute lognormal noise, Poisson counts per bin; token sums drawn per bin (`token_sums`)."""
    rng = np.random.default_rng(seed)
    n = int(duration_s / bin_seconds)
    t = (np.arange(n) + 0.5) * bin_seconds
    amp = (peak_to_trough - 1) / (peak_to_trough + 1)
    rate = mean_rps * (1 + amp * np.sin(2 * np.pi * (t - 10 * 3600.0) / 86400.0))
    minutes = (t // 60).astype(np.int64)
    noise = np.exp(noise_sigma * rng.standard_normal(int(minutes[-1]) + 1) - noise_sigma**2 / 2)
    counts = rng.poisson(rate * noise[minutes] * bin_seconds).astype(np.float64)
    prompt, output = token_sums(counts, tokens, rng, np.random.default_rng([seed, 2]))
    return BinnedWorkload("diurnal", bin_seconds, counts, prompt, output,
                          np.sort(tokens.prompt_tokens.astype(np.float64)),
                          np.sort(tokens.output_tokens.astype(np.float64)), MONDAY_2024)
