"""Local Kubernetes control plane + KWOK fake GPU nodes for e2e tests (see cluster.py)."""

from .cluster import (
    GPU_RESOURCE,
    KWOK_NODE_SELECTOR,
    KWOK_TOLERATION,
    ClusterError,
    LocalCluster,
    MissingBinariesError,
    check_binaries,
    wait_until,
)
from .provisioner import NodeProvisioner
from .stages import READY_DELAY_ANNOTATION, RUNNING_DELAY_ANNOTATION

__all__ = [
    "GPU_RESOURCE",
    "KWOK_NODE_SELECTOR",
    "KWOK_TOLERATION",
    "READY_DELAY_ANNOTATION",
    "RUNNING_DELAY_ANNOTATION",
    "ClusterError",
    "LocalCluster",
    "MissingBinariesError",
    "NodeProvisioner",
    "check_binaries",
    "wait_until",
]
