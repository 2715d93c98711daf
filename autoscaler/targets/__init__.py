"""Scale targets: what a policy's `targetRef` points at, read and written through the Kubernetes API.

Every target is bound to the policy's own namespace when it is resolved; there is no way to name a
target in another namespace.
"""

from autoscaler.targets.base import ScaleReading, ScaleTarget, TargetBlocked, TargetNotFound
from autoscaler.targets.resolve import resolve_target

__all__ = ["ScaleReading", "ScaleTarget", "TargetBlocked", "TargetNotFound", "resolve_target"]
