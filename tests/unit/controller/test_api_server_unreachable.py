"""The API server going away (connection refused while it restarts) must not kill the controller's loops."""

from __future__ import annotations

import threading
from typing import Any

import urllib3

from autoscaler.controller.events import EventRecorder
from autoscaler.controller.leader import LeaderConfig, LeaderElector


class _Unreachable:
    """Every client call fails the way the official client does when nothing listens."""

    calls = 0

    def __getattr__(self, _name: str) -> Any:
        def call(*_a: Any, **_k: Any) -> Any:
            _Unreachable.calls += 1
            raise urllib3.exceptions.MaxRetryError(None, "/x", "connection refused")  # type: ignore[arg-type]

        return call


def test_leader_election_keeps_retrying_while_the_api_server_is_down() -> None:
    elector = LeaderElector(_Unreachable(), LeaderConfig("ns", "lease", "me", 0.3, 0.2, 0.01))
    stop = threading.Event()
    before = _Unreachable.calls
    thread = elector.start(stop)
    threading.Event().wait(0.15)
    assert thread.is_alive()  # the loop survived the refused connections
    assert _Unreachable.calls - before >= 3  # and kept trying
    assert not elector.is_leader()
    assert not elector.standby_healthy
    stop.set()
    thread.join(2)
    assert not thread.is_alive()


def test_recording_an_event_never_raises_when_the_api_server_is_down() -> None:
    recorder = EventRecorder(_Unreachable(), "me")
    obj = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "p", "namespace": "ns", "uid": "u"}}
    recorder.record(obj, "Normal", "ScaledUp", "scaled")  # no exception
    assert recorder.created == 0
