"""Turning work into a replica count, robust to absurd inputs (they end at replicas.max anyway)."""

from __future__ import annotations

import math

MAX_REPLICAS = 1_000_000  # arithmetic ceiling, far above any policy's max


def replicas_for(work: float, per_replica: float) -> int:
    """Replicas needed to carry `work` when each carries `per_replica`."""
    if not per_replica > 0:
        return MAX_REPLICAS if work > 0 else 0
    n = work / per_replica
    return MAX_REPLICAS if not n < MAX_REPLICAS else max(0, math.ceil(n - 1e-9))
