"""Assembling an emulator from a trace: the simulator's fleet, a clock, a server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscaler.emulator.fleet_driver import FleetDriver, ReplicasSource
from autoscaler.emulator.server import EmulatorServer


def build_emulator(trace: Any, replicas: ReplicasSource, *, model: str = "emulated-model",
                   engine: str = "vllm", speed: float = 1.0, host: str = "127.0.0.1", port: int = 0,
                   namespace: str = "default",
                   targets_file: str | Path | None = None, serving: Any = None, cold_start: Any = None,
                   seed: int = 0) -> EmulatorServer:
    """An emulator serving `trace` (a `simulations.trace.Trace`) through the simulator's request-level
    fleet. `serving`/`cold_start` are `simulations.profiles` objects (defaults: the simulator's default
    serving profile and its "warm" cold start, so replicas asked for appear within a minute)."""
    from simulations.fleet import RequestFleet
    from simulations.profiles import COLD_START_PROFILES, ServingProfile

    initial = replicas()
    fleet = RequestFleet(trace, serving or ServingProfile(), cold_start or COLD_START_PROFILES["warm"],
                         initial_replicas=initial if initial is not None else 1, seed=seed)
    driver = FleetDriver(fleet, replicas, speed=speed)
    return EmulatorServer(driver, model=model, engine=engine, host=host, port=port, namespace=namespace,
                          targets_file=targets_file)
