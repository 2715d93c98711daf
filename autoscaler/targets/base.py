"""What every scale target offers: read the current scale, write a new replica count."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class TargetNotFound(Exception):
    """The object named by targetRef (or the workload it manages) does not exist."""


class TargetBlocked(Exception):
    """The target exists but this controller must not write it (another autoscaler owns replicas, or
    the object is configured for static replicas). The message says what to change."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # picklable: rebuilt from its fields
        return type(self), (self.reason, self.message)


@dataclass(frozen=True, slots=True)
class ScaleReading:
    """The target's scale as read now. `selector` is the label selector of its pods (string form)."""

    replicas: int  # spec.replicas
    status_replicas: int
    selector: str | None
    resource_version: str | None
    # Set when the target can be read but must not be written; the decision is then only recorded.
    blocked: TargetBlocked | None = None


class ScaleTarget(Protocol):
    namespace: str
    description: str  # e.g. "Deployment llama-8b" (for messages and events)

    def read(self, fresh: bool = False) -> ScaleReading:
        """Raises TargetNotFound, or ApiException on API errors. `fresh`: from the API server, not a cache."""
        ...

    def write(self, replicas: int, reading: ScaleReading) -> None:
        """Set replicas, conditional on `reading.resource_version` (raises ApiException 409 on conflict)."""
        ...
