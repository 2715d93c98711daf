"""e2e fixtures. ``local_cluster`` is a real control plane with KWOK GPU nodes (tests/e2e/cluster).
``autoscaler_release`` (the chart, helm-installed) and ``workspace`` (a test's namespace, nodes and
processes) come from tests/e2e/drill."""

from .cluster.fixtures import local_cluster  # noqa: F401
from .drill.fixtures import autoscaler_release, workspace  # noqa: F401
