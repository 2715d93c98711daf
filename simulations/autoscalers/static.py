"""`static`: a fixed number of replicas for the whole run (protocol §4); the sweep finds the cheapest N."""

from __future__ import annotations

from simulations.autoscalers.base import Context


class Static:
    name = "static"

    def __init__(self, replicas: int):
        if replicas < 1:
            raise ValueError("a static fleet needs at least 1 replica")
        self.replicas = replicas
        self.interval_seconds = 3600.0

    def initial_replicas(self, default: int) -> int:
        return self.replicas

    def tick(self, now: float, ctx: Context) -> int | None:
        return self.replicas
