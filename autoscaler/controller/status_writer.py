"""Writing a policy's status: a merge-patch of what differs from the status as last written (a quiet tick
costs no API call), the stored core state rewritten before it is `state_max_age_seconds` old, and Ready=False
with its reason. A failed write is counted and logged, never raised: the tick goes on."""

from __future__ import annotations

import logging
import math
import zlib

from kubernetes import client

from autoscaler.controller.conditions import READY, merge_patch, set_condition
from autoscaler.controller.runtime import Obj, PolicyRuntime, policy_key
from autoscaler.controller.status import state_fingerprint, status_fingerprint
from autoscaler.controller.telemetry import ControllerMetrics
from autoscaler.policy import API_GROUP, PLURAL, VERSION
from autoscaler.targets.api import API_ERRORS, call_json, describe_error, error_code

log = logging.getLogger(__name__)


class StatusWriter:
    def __init__(self, custom: client.CustomObjectsApi, metrics: ControllerMetrics, state_max_age_seconds: float):
        self.custom, self.metrics = custom, metrics
        # The core state in status is at most this old (while the policy is reconciled); changes that would
        # alter a decision after a restart are written in the tick they happen (see status.state_fingerprint).
        self.state_max_age_seconds = state_max_age_seconds

    def base(self, raw: Obj, rt: PolicyRuntime) -> Obj:
        """A copy of the status as last written (or as stored), with its conditions a list of mappings."""
        base = rt.status if rt.status is not None else (raw.get("status") or {})
        if not isinstance(base, dict):
            base = {}
        out = {k: (list(v) if isinstance(v, list) else v) for k, v in base.items()}
        conds = out.get("conditions")
        if conds is not None:  # whatever else was stored there, conditions are a list of mappings
            out["conditions"] = [c for c in conds if isinstance(c, dict)] if isinstance(conds, list) else []
        return out

    def patch(self, raw: Obj, rt: PolicyRuntime, status: Obj) -> bool:
        """Merge-patch what differs from the status as last written; True when the status is as given."""
        old = rt.status if rt.status is not None else (raw.get("status") or {})
        patch = merge_patch(old, status)
        if not patch:
            rt.status = status
            return True
        rt.fingerprint = None  # whatever is written now, the next decision compares against it afresh
        meta = raw.get("metadata") or {}
        try:
            call_json(
                self.custom.patch_namespaced_custom_object_status,
                API_GROUP,
                VERSION,
                meta.get("namespace"),
                PLURAL,
                meta.get("name"),
                {"status": patch},
            )
            rt.status = status
            return True
        except API_ERRORS as e:
            self.metrics.api_errors.labels(operation="patch status", code=error_code(e)).inc()
            log.warning("could not update status of %s: %s", policy_key(raw), describe_error(e))
            return False

    def persist(self, raw: Obj, rt: PolicyRuntime, status: Obj, now: float) -> None:
        """Write the decision's status when something a user or a restart needs changed, or when the stored
        core state has reached `state_max_age_seconds`; otherwise nothing (a quiet tick costs no API call)."""
        fp = status_fingerprint(status) + state_fingerprint(rt.state)
        stale = rt.persist_due is None or now >= rt.persist_due
        if fp == rt.fingerprint and not stale:
            return
        if self.patch(raw, rt, status):
            rt.fingerprint, rt.persist_due = fp, self.next_persist(policy_key(raw), now)

    def next_persist(self, key: str, written: float) -> float:
        """The first of the policy's slots after `written`. Slots are `state_max_age_seconds` apart, at a stable
        per-policy phase: the stored state is never older than the bound, and policies written in the same
        tick (created together, or after a burst) do not all reach the bound in the same later tick."""
        bound = self.state_max_age_seconds
        phase = bound * (zlib.crc32(key.encode()) % 1000) / 1000
        return phase + (math.floor((written - phase) / bound) + 1) * bound

    def not_ready(self, raw: Obj, rt: PolicyRuntime, now: float, reason: str, message: str,
                  *others: tuple[str, bool, str, str], observed: bool = False) -> None:
        """Write the status with Ready False for `reason` (and the `others` conditions as given: kind, status,
        reason, message); `observed`: the spec's generation is observed too."""
        gen = (raw.get("metadata") or {}).get("generation")
        status = self.base(raw, rt)
        conds = status.get("conditions") or []
        for kind, value, why, text in (*others, (READY, False, reason, message)):
            conds = set_condition(conds, kind, value, why, text, now, gen)
        status.update(conditions=conds, **({"observedGeneration": gen} if observed else {}))
        self.patch(raw, rt, status)
