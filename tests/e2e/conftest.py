"""e2e fixtures. ``local_cluster`` is a real control plane with KWOK GPU nodes (tests/e2e/cluster)."""

from .cluster.fixtures import local_cluster  # noqa: F401
