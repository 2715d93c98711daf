"""The policies the simulator compares: `ours` (the decision core) and the baselines.

Each is an `Autoscaler`: every `interval_seconds` it is asked for the target's replica count, given the
time, the metrics view (Prometheus with lags) and the fleet (the scale target: replica counts by phase,
cluster facts, completed cold-start stages). None means "do not write".
"""

from simulations.autoscalers.base import Autoscaler, Context, FleetLike

__all__ = ["Autoscaler", "Context", "FleetLike"]
