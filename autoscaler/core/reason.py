"""Why a decision came out as it did: one reason per decision, shown in events and the policy's status."""

from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    SCALE_UP_PREDICTIVE = "ScaleUpPredictive"
    SCALE_UP_REACTIVE = "ScaleUpReactive"
    SCALE_UP_FLOOR = "ScaleUpFloor"
    SCALE_UP_RATE_LIMITED = "ScaleUpRateLimited"
    SCALE_UP_LEAVING = "ScaleUpLeaving"  # replacements for replicas on cordoned/draining nodes
    SCALE_UP_FROM_ZERO = "ScaleUpFromZero"  # the gateway's demand at 0 replicas (spec.scaleFromZero)
    SCALE_DOWN = "ScaleDown"
    SCALE_DOWN_MAX = "ScaleDownToMax"
    SCALE_DOWN_TO_ZERO = "ScaleDownToZero"  # idle for scaleFromZero.idleSeconds
    STABILIZING = "HoldStabilizing"
    PANIC_HOLD = "HoldPanic"
    STEADY = "Steady"
    METRICS_MISSING = "MetricsMissing"
    UNSCHEDULABLE = "HoldUnschedulable"
    TARGET_UNKNOWN = "TargetUnknown"
