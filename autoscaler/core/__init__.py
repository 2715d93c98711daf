"""The decision core: pure functions of (policy, signals, state, now). No I/O, no wall clock."""

from autoscaler.core.capacity import CapacityStats, work_rate
from autoscaler.core.coldstart import ColdStartStats, LeadTime, lead_time
from autoscaler.core.decide import Decision, DecisionResult, decide, forecast_config
from autoscaler.core.reason import Reason
from autoscaler.core.signals import (
    STAGES,
    ClusterFacts,
    Measured,
    ReplicaCounts,
    Signals,
    Stage,
    StageObservation,
    StartingReplica,
)
from autoscaler.core.state import CoreState

__all__ = [
    "STAGES",
    "CapacityStats",
    "ClusterFacts",
    "ColdStartStats",
    "CoreState",
    "Decision",
    "DecisionResult",
    "LeadTime",
    "Measured",
    "Reason",
    "ReplicaCounts",
    "Signals",
    "Stage",
    "StageObservation",
    "StartingReplica",
    "decide",
    "forecast_config",
    "lead_time",
    "work_rate",
]
