"""Kubernetes Events: one per (object, reason, message) per window, counted up instead of repeated, and a body
the API server's validation accepts."""

from __future__ import annotations

from kubernetes import client

from autoscaler.controller.events import COMPONENT, EventRecorder, event_body
from tests.unit.controller.fakeapi import FakeKube

POLICY = {"apiVersion": "autoscaler.inference.dev/v1alpha1", "kind": "ModelScalingPolicy",
          "metadata": {"name": "llama", "namespace": "models", "uid": "u1", "resourceVersion": "7"}}


def test_an_event_names_its_object_and_stays_within_the_api_servers_limits() -> None:
    body = event_body(POLICY, "llama.abc", "Warning", "SLOInfeasible", "x" * 5000, "2026-12-07T00:00:00Z",
                      "i" * 300)
    assert body["metadata"] == {"name": "llama.abc", "namespace": "models"}
    assert body["involvedObject"] == {"apiVersion": POLICY["apiVersion"], "kind": "ModelScalingPolicy",
                                      "name": "llama", "namespace": "models", "uid": "u1", "resourceVersion": "7"}
    assert len(body["message"]) == 1024 and len(body["reportingInstance"]) == 128
    assert body["count"] == 1 and body["firstTimestamp"] == body["lastTimestamp"] == "2026-12-07T00:00:00Z"
    assert body["source"] == {"component": COMPONENT} and body["reportingComponent"] == COMPONENT
    # an object without a namespace (cluster-scoped, or a malformed one) files its event in "default"
    assert event_body({"metadata": {"name": "n"}}, "n.1", "Normal", "R", "m", "t", "i")["metadata"]["namespace"] == \
        "default"


def test_a_repeated_event_is_counted_on_the_first_not_sent_again(api: client.ApiClient, kube: FakeKube) -> None:
    now = [1000.0]
    rec = EventRecorder(client.CoreV1Api(api), "ctrl-0", clock=lambda: now[0], dedupe_window_seconds=600.0,
                        min_update_interval_seconds=60.0)
    rec.record(POLICY, "Warning", "SLOInfeasible", "12% of requests")
    now[0] += 30.0
    rec.record(POLICY, "Warning", "SLOInfeasible", "12% of requests")  # within a minute: only counted
    now[0] += 40.0
    rec.record(POLICY, "Warning", "SLOInfeasible", "12% of requests")  # a minute on: the count is written
    events = kube.items("", "events")
    assert len(events) == 1 and events[0]["count"] == 3
    assert (rec.created, rec.updated, rec.suppressed) == (1, 1, 1)
    rec.record(POLICY, "Warning", "SLOInfeasible", "30% of requests")  # another message is another event
    now[0] += 600.0
    rec.record(POLICY, "Warning", "SLOInfeasible", "12% of requests")  # past the window: a new one
    assert len(kube.items("", "events")) == 3
