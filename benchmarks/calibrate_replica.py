"""The simulated replica against a published measurement of vLLM serving Llama-3.1-8B on one H100.

Reference (docs/vllm-replica-model.md, "Calibration"): vLLM's own nightly performance benchmark (the
`vllm/performance-benchmark` Buildkite pipeline, its "Latency tests" table), test `latency_llama8B_tp1`
on an H100 80 GB (tensor parallel 1): a fixed batch of 8 prompts of 32 tokens, 128 output tokens each,
submitted together (`benchmark_latency.py`, offline `LLM`), end-to-end latency of the batch: mean
997.542 ms, median 997.365 ms, p99 999.409 ms. On the same pipeline, the A100-SXM4-80GB runs it in
1585.43 ms (mean) and the H200 in 833.421 ms.

This replays the same setup on one simulated replica (the `ServingProfile` defaults, vLLM's offline
`LLM` token budget of 16384) and prints measured vs simulated, plus the step-time split the latency test
constrains: one prefill step of 256 tokens, then 127 decode steps of a batch of 8.

Run: `python benchmarks/calibrate_replica.py` (exit status 1 when the simulated latency is off by more than
the tolerance, 5 %).
"""

from __future__ import annotations

import sys

import numpy as np

from simulations.fleet import RequestFleet
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace

MEASURED_MS = 997.542  # latency_llama8B_tp1, H100, mean of the batch latency
BATCH, PROMPT, OUTPUT = 8, 32, 128
TOLERANCE = 0.05


def simulated_batch_latency(serving: ServingProfile, batch: int = BATCH, prompt: int = PROMPT,
                            output: int = OUTPUT, resolution: float = 1e-4) -> float:
    """Seconds until the last of `batch` requests submitted together at t = 0 finishes, on one replica."""
    n = batch
    trace = Trace("latency-test", np.zeros(n), np.full(n, prompt, dtype=np.int64),
                  np.full(n, output, dtype=np.int64), 0.0)
    fleet = RequestFleet(trace, serving, COLD_START_PROFILES["warm"], initial_replicas=1,
                         per_replica_histograms=False)
    t = 0.0
    while fleet.success_total < n:
        t += resolution
        fleet.advance(t)
        if t > 3600:
            raise RuntimeError("the simulated batch did not finish within an hour")
    return t


def main() -> int:
    serving = ServingProfile(max_num_batched_tokens=16384)  # vLLM's offline LLM default on an H100
    sim = simulated_batch_latency(serving)
    prefill_step = serving.itl_base_seconds + BATCH * PROMPT / serving.prefill_tokens_per_second
    decode_step = serving.itl(BATCH, PROMPT + OUTPUT / 2)
    err = sim * 1000 / MEASURED_MS - 1
    print("vLLM latency_llama8B_tp1 (H100, batch 8, 32 in / 128 out), end-to-end latency of the batch")
    print(f"  measured (vLLM nightly benchmark, mean): {MEASURED_MS:8.1f} ms")
    print(f"  simulated (ServingProfile defaults):     {sim * 1000:8.1f} ms   ({err:+.1%})")
    print(f"  of which: prefill step {prefill_step * 1000:.1f} ms, 127 decode steps of ~{decode_step * 1000:.2f} ms")
    print(f"  implied measured decode step (prefill as simulated): "
          f"{(MEASURED_MS / 1000 - prefill_step) / (OUTPUT - 1) * 1000:.2f} ms")
    ok = abs(err) <= TOLERANCE
    print(f"  within ±{TOLERANCE:.0%}: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
