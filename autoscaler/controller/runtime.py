"""What the controller keeps per policy between ticks, and the key it files it under."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from autoscaler.core import CoreState
from autoscaler.policy import ModelScalingPolicy
from autoscaler.targets import ScaleTarget
from forecasting import ForecastConfig

Obj = dict[str, Any]


def policy_key(raw: Obj) -> str:
    """`namespace/name` of a policy object as the API server returned it."""
    meta = raw.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


@dataclass
class PolicyRuntime:
    """What the controller keeps per policy between ticks."""

    state: CoreState | None = None
    next_due: float = 0.0
    failures: int = 0
    parsed_for: tuple[Any, Any] | None = None  # (uid, generation) that `policy`/`invalid` belong to
    policy: ModelScalingPolicy | None = None
    invalid: str | None = None
    forecast_cfg: ForecastConfig | None = None
    status: Obj | None = None  # the status as we last wrote it
    pod_addresses: list[str] = field(default_factory=list)
    restored: bool = False  # `state` came from status.coreState and no decide has succeeded on it yet
    inflight: Future[Any] | None = None  # a read or act still running past its phase budget
    target: ScaleTarget | None = None  # resolved for `parsed_for`
    fingerprint: tuple[Any, ...] | None = None  # of the status (and core state) as last written
    persist_due: float | None = None  # when the core state in status must be rewritten (its age bound)
