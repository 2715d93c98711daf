"""A vLLM (or SGLang/TGI) metrics emulator: the simulator's fleet served as real /metrics endpoints.

`build(trace, replicas=...)` wires `simulations.fleet.RequestFleet` to a `FleetDriver` (clock and
replica count) and an `EmulatorServer` (HTTP). `inference-autoscaler emulate` is the command line.
"""

from __future__ import annotations

from autoscaler.emulator.exposition import CONTENT_TYPE, render
from autoscaler.emulator.fleet_driver import FleetDriver, ReplicasSource, fixed_replicas, replicas_file
from autoscaler.emulator.server import EmulatorServer

__all__ = [
    "CONTENT_TYPE",
    "EmulatorServer",
    "FleetDriver",
    "ReplicasSource",
    "fixed_replicas",
    "render",
    "replicas_file",
]
