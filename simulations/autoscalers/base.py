"""The interface every simulated autoscaler implements, and what it is given each tick."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from autoscaler.core import ClusterFacts, ReplicaCounts, StageObservation
from simulations.lifecycle import Lifecycle
from simulations.metrics_view import MetricsView


class FleetLike(Protocol):
    """What `RequestFleet` and `FluidFleet` share (see `simulations.fleet`)."""

    target: int
    lifecycle: Lifecycle

    @property
    def ready_replicas(self) -> int: ...
    @property
    def in_flight(self) -> float: ...
    def replica_counts(self, t: float) -> ReplicaCounts: ...
    def cluster_facts(self, t: float) -> ClusterFacts: ...
    def take_observations(self, t: float) -> tuple[StageObservation, ...]: ...


@dataclass
class Context:
    view: MetricsView
    fleet: FleetLike
    start_epoch: float  # unix seconds of t = 0 (time-of-day floors)
    min_replicas: int
    max_replicas: int


class Autoscaler(Protocol):
    name: str
    interval_seconds: float

    def initial_replicas(self, default: int) -> int:
        """Replicas at t = 0 (most policies: the scenario's default)."""
        ...

    def tick(self, now: float, ctx: Context) -> int | None: ...
