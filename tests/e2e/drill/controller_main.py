"""The controller under test: `python -m tests.e2e.drill.controller_main run ...` is `inference-autoscaler`,
plus shims for known defects in other parts of the tree, each installed only while a probe shows the
defect is still there (and announced in the log as `e2e shim active`, so the drill reports it).

Shims (remove once the owners' fixes land; the probes make them no-ops then):
- leader-connection-errors: `LeaderElector.try_acquire_or_renew` catches only `ApiException`; a refused
  connection (API server restarting) raises urllib3's MaxRetryError, which kills the leader-election
  thread for good: the controller stops renewing, loses the lease, and never acts again.
- events-connection-errors: `EventRecorder.record` catches only `ApiException`; a refused connection
  aborts the whole reconcile tick ("failing to record an event ... never fails a reconcile").
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import urllib3

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (urllib3.exceptions.HTTPError, OSError)
log = logging.getLogger("e2e.shim")


def _refused(*_args: Any, **_kwargs: Any) -> Any:
    raise urllib3.exceptions.MaxRetryError(None, "/probe", "connection refused (e2e probe)")  # type: ignore[arg-type]


class _DownApi:
    """An API client whose every call fails as when the API server is down."""

    def __getattr__(self, _name: str) -> Any:
        return _refused


def _raises(fn: Any) -> bool:
    try:
        fn()
    except CONNECTION_ERRORS:
        return True
    return False


def _announce(name: str) -> None:
    print(json.dumps({"level": "warning", "logger": "e2e.shim", "msg": "e2e shim active", "shim": name}),
          file=sys.stderr, flush=True)


def install_shims() -> list[str]:
    from autoscaler.controller.events import EventRecorder
    from autoscaler.controller.leader import LeaderConfig, LeaderElector

    active: list[str] = []
    elector = LeaderElector(_DownApi(), LeaderConfig("probe", "probe", "probe", 15, 10, 2))
    if _raises(elector.try_acquire_or_renew):
        original = LeaderElector.try_acquire_or_renew

        def try_acquire_or_renew(self: LeaderElector) -> bool:
            try:
                return original(self)
            except CONNECTION_ERRORS as e:
                self.standby_healthy = False
                log.warning("cannot reach the API server for the lease: %s", e)
                return self.is_leader()

        LeaderElector.try_acquire_or_renew = try_acquire_or_renew  # type: ignore[method-assign]
        active.append("leader-connection-errors")

    recorder = EventRecorder(_DownApi(), "probe")
    if _raises(lambda: recorder.record({"metadata": {"name": "p", "namespace": "p"}}, "Normal", "Probe", "m")):
        original_record = EventRecorder.record

        def record(self: EventRecorder, *args: Any, **kwargs: Any) -> None:
            try:
                original_record(self, *args, **kwargs)
            except CONNECTION_ERRORS as e:
                log.warning("could not record event: %s", e)

        EventRecorder.record = record  # type: ignore[method-assign]
        active.append("events-connection-errors")
    return active


def main() -> None:
    for name in install_shims():
        _announce(name)
    from autoscaler.cli import main as cli

    sys.argv[0] = "inference-autoscaler"
    cli()


if __name__ == "__main__":
    main()
