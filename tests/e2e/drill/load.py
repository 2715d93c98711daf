"""The emulator's load and its replica count: vLLM metrics from the simulator's fleet, sized by the
Deployment's READY pods (polled from the API server), so capacity arrives only after the KWOK cold start.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from autoscaler.emulator.build import build_emulator
from autoscaler.emulator.server import EmulatorServer
from simulations.profiles import ColdStartProfile, ServingProfile
from simulations.scenario import bundled_path, load_scenario
from simulations.synthetic import flash_crowd_trace
from simulations.trace import Trace
from simulations.trace_loaders import load_azure_csv

# The cold start happens in Kubernetes (KWOK's pod-ready delay); the emulated fleet adds none of its own.
INSTANT = ColdStartProfile(name="instant", scheduling_seconds=0, node_provisioning_seconds=0,
                           image_pull_seconds=0, weight_load_seconds=0, warmup_seconds=0, spread=0,
                           free_gpus=None)
# One replica's work per request of the bundled Azure code slice at the policy's default capacity prior
# (15,000 prompt tok/s, 2,500 generated tok/s): ~2,015 prompt + ~28 output tokens -> ~0.145 replica-s.
SERVING = ServingProfile()


@dataclass(frozen=True)
class Burst:
    """A flash crowd in wall-clock seconds (emulator speed 1): the flash-crowd scenario's shape, shortened."""

    base_rps: float
    factor: float
    start_s: float
    ramp_s: float
    hold_s: float
    duration_s: float

    @property
    def end_s(self) -> float:
        """When the rate is back at base."""
        return self.start_s + 2 * self.ramp_s + self.hold_s


def flash_crowd(base_rps: float, start_s: float, hold_s: float, duration_s: float, ramp_s: float = 5.0,
                factor: float | None = None) -> Burst:
    """`factor` defaults to the flash-crowd scenario's burst factor."""
    if factor is None:
        factor = load_scenario("flash-crowd").trace.burst_factor
    return Burst(base_rps, factor, start_s, ramp_s, hold_s, duration_s)


def burst_trace(b: Burst, seed: int = 11) -> Trace:
    """The scenario generator (`simulations.synthetic.flash_crowd_trace`) with real token lengths from the
    bundled Azure code slice (not the scenario's conv token source: the drill's load is calibrated on it)."""
    tokens = load_azure_csv(bundled_path("azure_code_slice.csv"))
    return flash_crowd_trace(tokens, b.base_rps, b.factor, b.start_s, b.ramp_s, b.hold_s, b.duration_s, seed)


def steady_trace(rps: float, duration_s: float, seed: int = 5) -> Trace:
    return burst_trace(Burst(rps, 1.0, duration_s, 0.0, 1.0, duration_s), seed)


def is_ready(pod: Any) -> bool:
    if pod.metadata.deletion_timestamp is not None:
        return False
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


class ReadyPodsFollower:
    """The emulator's `ReplicasSource`: the number of Ready, non-terminating pods matching `selector`.

    A background thread polls the API server (every `poll_seconds`); the emulator reads the cached count.
    While the API server is unreachable the last count is kept (None is returned before the first read).
    """

    def __init__(self, core: Any, namespace: str, selector: str, poll_seconds: float = 0.5) -> None:
        self.core, self.namespace, self.selector, self.poll_seconds = core, namespace, selector, poll_seconds
        self.count: int | None = None
        self.history: list[tuple[float, int]] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> int | None:
        try:
            pods = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector,
                                                 _request_timeout=3).items
        except Exception:
            self.errors += 1
            return self.count
        n = sum(1 for p in pods if is_ready(p))
        if n != self.count:
            self.history.append((time.time(), n))
        self.count = n
        return n

    def __call__(self) -> int | None:
        return self.count

    def start(self) -> ReadyPodsFollower:
        self.poll()
        self._thread = threading.Thread(target=self._run, name="ready-pods-follower", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            self.poll()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class FollowingEmulator:
    """Emulator (in this process) + follower thread; `start()` starts both, the trace clock at t = 0."""

    def __init__(self, trace: Trace, follower: ReadyPodsFollower, *, model: str, namespace: str) -> None:
        self.follower = follower
        follower.start()
        self.server: EmulatorServer = build_emulator(trace, follower, model=model, engine="vllm", speed=1.0,
                                                     namespace=namespace, serving=SERVING, cold_start=INSTANT)
        self.started_wall = 0.0

    @property
    def url(self) -> str:
        return self.server.base_url

    def start(self) -> None:
        self.server.start()
        self.started_wall = self.server.driver.started_wall

    def truth(self) -> dict[str, Any]:
        return self.server.truth()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.server.stop()
        self.follower.stop()
