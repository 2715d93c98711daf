"""Run as a script: an emulator whose OpenAI API is timed by TEST_SERVING, on a free port, in its own
process (so the profiler under test does not share a GIL with it). Prints its base URL, then serves until
stdin closes. Usage: python emulator_proc.py SPEED"""

from __future__ import annotations

import sys

import numpy as np

from autoscaler.emulator.build import build_emulator
from autoscaler.emulator.fleet_driver import fixed_replicas
from simulations.profiles import ServingProfile
from simulations.trace import Trace

# A slow replica, so a profile at a few requests per second exercises queueing without many wall requests.
TEST_SERVING = ServingProfile(prefill_tokens_per_second=2000, itl_base_seconds=0.02,
                              itl_per_sequence_seconds=0.002, max_num_seqs=64)

if __name__ == "__main__":
    speed = float(sys.argv[1])
    one = Trace("idle", np.array([0.0]), np.array([1]), np.array([1]), 0.0)  # the /metrics fleet stays idle
    server = build_emulator(one, fixed_replicas(1), serving=TEST_SERVING, speed=speed)
    server.start()
    print(server.base_url, flush=True)
    sys.stdin.read()
    server.stop()
