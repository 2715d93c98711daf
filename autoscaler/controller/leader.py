"""Leader election on a `coordination.k8s.io/v1` Lease, as client-go does it.

- Acquire or renew with a compare-and-swap on the Lease's resourceVersion (a 409 means someone else won).
- Another holder's lease counts as expired only after its record has not changed for
  `leaseDurationSeconds` *as observed locally* (no trust in other machines' clocks).
- A leader that could not renew within `renew_deadline_seconds` stops acting at once, before the
  lease can expire for others.
- On graceful shutdown the leader releases the lease (empty holder), so a standby takes over at its
  next retry instead of waiting out the lease.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from autoscaler.observe.timefmt import format_micro_time
from autoscaler.targets.api import API_ERRORS, ApiException, call_json, is_conflict, is_not_found

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderConfig:
    namespace: str
    name: str
    identity: str
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0

    def __post_init__(self) -> None:
        if not self.lease_duration_seconds > self.renew_deadline_seconds > self.retry_period_seconds > 0:
            raise ValueError("need lease duration > renew deadline > retry period > 0")


class LeaderElector:
    def __init__(
        self,
        coordination: client.CoordinationV1Api,
        config: LeaderConfig,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        self.api, self.config = coordination, config
        self._mono, self._wall = monotonic, wall
        self._renewed_at: float | None = None  # monotonic time of our last successful acquire/renew
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0
        self.standby_healthy = True  # could we read the lease at the last attempt?
        # A lease call that hangs must end well within the renew deadline, so that a retry can still renew.
        half = max(0.5, config.renew_deadline_seconds / 2)
        self._timeout = (min(5.0, half), half)
        self.transitions = 0

    def is_leader(self) -> bool:
        r = self._renewed_at
        return r is not None and self._mono() - r < self.config.renew_deadline_seconds

    def _spec(self, holder: str | None, previous: dict[str, Any], now: float) -> dict[str, Any]:
        was_ours = previous.get("holderIdentity") == holder
        # As client-go: a new Lease starts at 0; every change of holder (after a release too) counts one.
        transitions = int(previous.get("leaseTransitions") or 0) + (0 if was_ours or not holder or not previous else 1)
        return {
            "holderIdentity": holder,
            "leaseDurationSeconds": max(1, round(self.config.lease_duration_seconds)) if holder else 1,
            "acquireTime": previous.get("acquireTime") if was_ours else format_micro_time(now),
            "renewTime": format_micro_time(now),
            "leaseTransitions": transitions,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt. Returns whether we hold the lease now."""
        cfg, now = self.config, self._wall()
        try:
            lease = call_json(self.api.read_namespaced_lease, cfg.name, cfg.namespace, _request_timeout=self._timeout)
        except ApiException as e:
            if not is_not_found(e):
                self.standby_healthy = False
                log.warning("cannot read lease %s/%s: %s", cfg.namespace, cfg.name, e.reason)
                return self.is_leader()
            body = {
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": self._spec(cfg.identity, {}, now),
            }
            try:
                call_json(self.api.create_namespaced_lease, cfg.namespace, body, _request_timeout=self._timeout)
            except ApiException as e2:
                self.standby_healthy = is_conflict(e2)
                return False
            return self._won()
        self.standby_healthy = True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        record = (
            holder,
            spec.get("renewTime"),
            spec.get("leaseDurationSeconds"),
            spec.get("leaseTransitions"),
        )
        if record != self._observed:
            self._observed, self._observed_at = record, self._mono()
        if holder and holder != cfg.identity:
            duration = float(spec.get("leaseDurationSeconds") or cfg.lease_duration_seconds)
            if self._mono() < self._observed_at + duration:
                self._renewed_at = None
                return False
        body = {
            "metadata": {
                "name": cfg.name,
                "namespace": cfg.namespace,
                "resourceVersion": (lease.get("metadata") or {}).get("resourceVersion"),
            },
            "spec": self._spec(cfg.identity, spec, now),
        }
        try:
            call_json(self.api.replace_namespaced_lease, cfg.name, cfg.namespace, body, _request_timeout=self._timeout)
        except ApiException as e:
            if not is_conflict(e):
                log.warning("cannot update lease %s/%s: %s", cfg.namespace, cfg.name, e.reason)
            return self.is_leader()
        if holder != cfg.identity:
            self.transitions += 1
            log.info("became leader", extra={"lease": f"{cfg.namespace}/{cfg.name}", "identity": cfg.identity})
        return self._won()

    def _won(self) -> bool:
        self._renewed_at = self._mono()
        return True

    def release(self) -> None:
        """Give the lease up (graceful shutdown), so a standby need not wait for it to expire."""
        if not self.is_leader():
            return
        cfg = self.config
        self._renewed_at = None
        try:
            lease = call_json(self.api.read_namespaced_lease, cfg.name, cfg.namespace, _request_timeout=self._timeout)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != cfg.identity:
                return
            body = {
                "metadata": {
                    "name": cfg.name,
                    "namespace": cfg.namespace,
                    "resourceVersion": lease["metadata"].get("resourceVersion"),
                },
                "spec": {**self._spec(None, spec, self._wall()), "acquireTime": None},
            }
            call_json(self.api.replace_namespaced_lease, cfg.name, cfg.namespace, body, _request_timeout=self._timeout)
            log.info("released leadership", extra={"lease": f"{cfg.namespace}/{cfg.name}"})
        except API_ERRORS as e:
            log.warning("could not release lease: %s", getattr(e, "reason", e))

    def run(self, stop: threading.Event) -> None:
        """Acquire, then renew every retry period, until `stop` (then release)."""
        while not stop.is_set():
            was = self.is_leader()
            try:
                now_leader = self.try_acquire_or_renew()
            except API_ERRORS as e:
                # API server unreachable (restarting): keep trying; leadership lapses on its own once the
                # renew deadline passes without a successful renewal, as client-go's does.
                self.standby_healthy = False
                log.warning("cannot reach the API server for lease %s/%s: %s", self.config.namespace,
                            self.config.name, e)
                now_leader = self.is_leader()
            if was and not now_leader:
                log.warning("lost leadership", extra={"lease": f"{self.config.namespace}/{self.config.name}"})
            stop.wait(self.config.retry_period_seconds)
        self.release()

    def start(self, stop: threading.Event) -> threading.Thread:
        t = threading.Thread(target=self.run, args=(stop,), name="leader-election", daemon=True)
        t.start()
        return t
