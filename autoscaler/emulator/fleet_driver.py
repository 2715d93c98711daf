"""Drives the simulator's request-level fleet on a clock and follows an outside replica count.

The fleet model itself is `simulations.fleet.RequestFleet` (this module adds none): a background thread
moves simulated time with the wall clock (× `speed`), sets the fleet's target replicas from a
`ReplicasSource` (re-read once per wall second) and refreshes a per-replica snapshot cache that the
HTTP server renders. Simulated time t = (wall − start) × speed seconds into the trace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from autoscaler.policy import MAX_REPLICAS

log = logging.getLogger("autoscaler.emulator")
MAX_FILE_BYTES = 64  # a replica count file holds one number

# Where the replica count comes from: returns the desired replicas, or None to keep the current one
# (an unreadable file, an API error). The e2e harness plugs in a Deployment's ready replicas here.
ReplicasSource = Callable[[], int | None]


class Fleet(Protocol):
    """The part of `simulations.fleet.RequestFleet` the emulator uses."""

    def advance(self, t_end: float) -> None: ...
    def set_target(self, replicas: int, t: float) -> None: ...
    def replica_snapshots(self, t: float) -> list[Any]: ...
    def scrape(self, t: float) -> Any: ...


def fixed_replicas(n: int) -> ReplicasSource:
    return lambda: n


def replicas_file(path: str | Path) -> ReplicasSource:
    """Reads an integer from `path` on every call; a missing or malformed file, or a count outside
    0..MAX_REPLICAS, keeps the current count. At most MAX_FILE_BYTES are read (the file may be anything)."""
    p = Path(path)
    warned: dict[str, bool] = {"bad": False}

    def read() -> int | None:
        try:
            with p.open("rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
            if len(raw) > MAX_FILE_BYTES:
                raise ValueError(f"longer than {MAX_FILE_BYTES} bytes")
            n = int(raw.decode().strip())
            if not 0 <= n <= MAX_REPLICAS:
                raise ValueError(f"{n} is outside 0..{MAX_REPLICAS}")
        except (OSError, ValueError) as e:  # (UnicodeDecodeError is a ValueError)
            if not warned["bad"]:
                log.warning("replicas file %s unreadable (%s): keeping the current replica count", p, e)
                warned["bad"] = True
            return None
        warned["bad"] = False
        return n

    return read


@dataclass(frozen=True, slots=True)
class Snapshot:
    sim_time: float
    wall_time: float
    replicas: tuple[Any, ...]  # ReplicaSnapshot, by replica_id order
    truth: Any  # simulations.sample.FleetSample: fleet totals at sim_time


MAX_SPEED = 1000.0  # simulated seconds per wall second: an hour of trace in 3.6 s


class FleetDriver:
    def __init__(self, fleet: Fleet, replicas: ReplicasSource, *, speed: float = 1.0,
                 tick_seconds: float = 0.1, replicas_poll_seconds: float = 1.0,
                 clock: Callable[[], float] = time.time, history_steps: int = 6000,
                 recent_steps: int = 50) -> None:
        if not 0 < speed <= MAX_SPEED:
            raise ValueError(f"speed must be within (0, {MAX_SPEED:g}]")
        self.fleet = fleet
        self.replicas = replicas
        self.speed = speed
        self.tick_seconds = tick_seconds
        self.replicas_poll_seconds = replicas_poll_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started_wall = clock()
        self.target: int | None = None
        self._last_poll = -1e18
        self._snapshot: Snapshot | None = None
        # (wall time, fleet totals) of recent steps: ground truth for what a scrape at that time saw.
        self.history: deque[tuple[float, Any]] = deque(maxlen=history_steps)
        # The last few full snapshots (per-replica values), for checking what each scrape saw.
        self.recent: deque[Snapshot] = deque(maxlen=recent_steps)
        self.step()

    def sim_time(self, wall: float | None = None) -> float:
        return max(0.0, ((self._clock() if wall is None else wall) - self.started_wall) * self.speed)

    def step(self) -> Snapshot:
        """Advance to the current simulated time, apply the replica count, refresh the snapshot."""
        with self._lock:
            wall = self._clock()
            t = self.sim_time(wall)
            if wall - self._last_poll >= self.replicas_poll_seconds:
                self._last_poll = wall
                try:
                    n = self.replicas()
                except Exception as e:  # a broken provider must not stop the emulator
                    log.warning("replica source failed: %s", e)
                    n = None
                if n is not None and n != self.target:
                    log.info("replicas %s -> %d at t=%.1fs", self.target, n, t)
                    self.fleet.set_target(n, t)
                    self.target = n
            snaps = self.fleet.replica_snapshots(t)
            snap = Snapshot(t, wall, tuple(sorted(snaps, key=lambda r: r.replica_id)), self.fleet.scrape(t))
            self._snapshot = snap
            self.history.append((wall, snap.truth))
            self.recent.append(snap)
            return snap

    def truth_at(self, wall: float) -> Any:
        """Fleet totals as of the last step at or before wall-clock time `wall` (None if older than the
        kept history)."""
        best = None
        for t, truth in list(self.history):
            if t > wall:
                break
            best = truth
        return best

    @property
    def snapshot(self) -> Snapshot:
        s = self._snapshot
        assert s is not None
        return s

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="emulator-clock", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.tick_seconds):
            try:
                self.step()
            except Exception:
                log.exception("emulator step failed; stopping the clock")
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
