"""Cold-start and capacity observation from Kubernetes objects (pods, events, nodes) as plain dicts.

Nothing here calls the API: the controller hands in what its informers hold, so these functions are
tested with literal objects.
"""

from autoscaler.observe.coldstart import ColdStartObserver
from autoscaler.observe.nodes import cluster_facts, gpu_usage_by_node
from autoscaler.observe.pods import PodIndex, replica_counts
from autoscaler.observe.selector import LabelSelector

__all__ = [
    "ColdStartObserver",
    "LabelSelector",
    "PodIndex",
    "cluster_facts",
    "gpu_usage_by_node",
    "replica_counts",
]
