"""What a run achieved: SLO attainment, latency quantiles, GPU-hours (protocol §3)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Outcome:
    requests: float
    attainment: float  # share of requests with TTFT ≤ SLO (unserved requests count as misses); over the
    # requests whose SLO an idle replica can meet once simulations.feasibility has scored the run
    ttft_p50_seconds: float
    ttft_p90_seconds: float
    ttft_p99_seconds: float
    queue_p99_seconds: float
    gpu_hours: float
    scale_events: int
    violation_seconds: float = 0.0  # time (by arrival minute) whose TTFT p90 exceeded the SLO
    unserved: float = 0.0
    # share of requests whose TTFT SLO even an idle replica misses (prefill alone is over budget): left out
    # of `attainment`; `attainment_all` is over every request (None: not scored for feasibility)
    infeasible_share: float = 0.0
    attainment_all: float | None = None
    # Requests a scale-down aborted (still on a removed replica when its termination grace period ran out);
    # each is an SLO miss. `aborted_counted`: whether the fleet model tracks them at all (the request-level
    # fleet does; the fluid model drains without a grace period and reports 0, not counted).
    aborted: float = 0.0
    aborted_counted: bool = False
    # warm capacity (simulations/lifecycle.py): placeholders' share of gpu_hours; replica starts on a warm slot,
    # on a cache (warm slot or a ready node with the image), or cold (a node boot or an image pull)
    warm_gpu_hours: float = 0.0
    warm_starts: int = 0
    cache_hit_starts: int = 0
    cold_starts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) and np.isfinite(v) else v) for k, v in asdict(self).items()}


_NEVER = 1e12  # stands in for "never served" inside quantiles


def _q(x: np.ndarray, q: float) -> float:
    if not len(x):
        return float("nan")
    v = float(np.quantile(np.where(np.isfinite(x), x, _NEVER), q))
    return float("inf") if v >= _NEVER else v


def outcome_from_requests(
    ttft: np.ndarray, queue_time: np.ndarray, slo_ttft_seconds: float, gpu_seconds: float, scale_events: int,
    arrival_s: np.ndarray | None = None, aborted: np.ndarray | None = None,
) -> Outcome:
    """`aborted`: a mask of requests a scale-down aborted; they count as misses whatever their TTFT was."""
    served = np.isfinite(ttft)
    full = np.where(served, ttft, np.inf)
    if aborted is not None:
        full = np.where(aborted, np.inf, full)
    violation = 0.0
    if arrival_s is not None and len(arrival_s):
        minute = (arrival_s // 60).astype(np.int64)
        for m in np.unique(minute):
            sel = full[minute == m]
            if np.quantile(sel, 0.9) > slo_ttft_seconds:
                violation += 60.0
    return Outcome(
        requests=float(len(ttft)),
        attainment=float(np.mean(full <= slo_ttft_seconds)) if len(ttft) else 1.0,
        ttft_p50_seconds=_q(full, 0.5),
        ttft_p90_seconds=_q(full, 0.9),
        ttft_p99_seconds=_q(full, 0.99),
        queue_p99_seconds=_q(np.where(np.isfinite(queue_time), queue_time, np.inf), 0.99),
        gpu_hours=gpu_seconds / 3600.0,
        scale_events=scale_events,
        violation_seconds=violation,
        unserved=float(np.sum(~served)),
        aborted=float(np.sum(aborted)) if aborted is not None else 0.0,
        aborted_counted=aborted is not None,
    )
