"""One bad policy never stops the others: every failure is contained to the policy that caused it."""

from __future__ import annotations

import time
from typing import Any

import pytest

import autoscaler.controller.reconciler as reconciler_module
from autoscaler.core import decide as real_decide
from autoscaler.targets.scale import DeploymentScale
from tests.unit.controller.conftest import (
    GROUP,
    add_deployment,
    add_gpu_node,
    add_policy,
    condition,
    make_controller,
    status_of,
)
from tests.unit.controller.fakeapi import FakeKube

# Specs the CRD used to accept that crashed the tick (issue 11). Each now fails validation, naming its field.
POISON: dict[str, tuple[dict[str, Any], str]] = {
    "time zone that is a directory": (
        {"replicas": {"min": 1, "max": 20, "floorSchedule": [
            {"start": "08:00", "end": "20:00", "minReplicas": 2, "timezone": "America"}]}},
        "spec.replicas.floorSchedule[0].timezone",
    ),
    "time zone over 255 characters": (
        {"replicas": {"min": 1, "max": 20, "floorSchedule": [
            {"start": "08:00", "end": "20:00", "minReplicas": 2, "timezone": "A" * 300}]}},
        "spec.replicas.floorSchedule[0].timezone",
    ),
    "history shorter than a step": ({"forecast": {"historySeconds": 30, "stepSeconds": 60}}, "spec.forecast"),
    "cold start of 1e308 s": ({"coldStart": {"imagePullSeconds": 1e308}}, "spec.coldStart.imagePullSeconds"),
    "scale-up step of 1.7e308 %": ({"scaleUp": {"maxStepPercent": 1.7e308}}, "spec.scaleUp.maxStepPercent"),
    "forecast step of 1e-6 s": ({"forecast": {"stepSeconds": 1e-6}}, "spec.forecast.stepSeconds"),
    "forecast step of 0.0002 s": ({"forecast": {"stepSeconds": 0.0002}}, "spec.forecast.stepSeconds"),
}


def _two_policies(kube: FakeKube, **bad_spec: Any) -> None:
    add_gpu_node(kube)
    add_deployment(kube, "good", replicas=1)
    add_deployment(kube, "bad", replicas=1)
    add_policy(kube, name="good", target="good")
    add_policy(kube, name="bad", target="bad", **bad_spec)


def _replicas(kube: FakeKube, name: str) -> int:
    obj = kube.get("apps", "deployments", "models", name)
    assert obj is not None
    return int(obj["spec"]["replicas"])


@pytest.mark.parametrize("case", sorted(POISON))
def test_a_poison_spec_is_an_invalid_spec_condition_and_the_other_policy_still_scales(kube, api, source, case):
    spec, field = POISON[case]
    _two_policies(kube, **spec)
    c = make_controller(api, source)
    c.sync()
    now = time.time()
    report = c.reconciler.tick(now)
    assert report.reconciled == 1 and report.invalid == 1
    assert _replicas(kube, "good") == status_of(kube, "good")["desiredReplicas"] > 1
    ready = condition(status_of(kube, "bad"), "Ready")
    assert ready["status"] == "False" and ready["reason"] == "InvalidSpec"
    assert field in ready["message"]
    assert _replicas(kube, "bad") == 1
    # and it is not retried in a tight loop: the next attempt is a minute away unless the spec changes
    assert c.reconciler.runtimes["models/bad"].next_due >= now + 60
    assert c.reconciler.tick(now + 1).due == 0


@pytest.mark.parametrize("error", [MemoryError, OverflowError, RecursionError, ZeroDivisionError, KeyError])
def test_any_exception_in_one_policys_decision_is_contained_and_backed_off(kube, api, source, monkeypatch, error):
    def decide(spec: Any, *a: Any, **k: Any) -> Any:
        if spec.model.name == "bad":
            raise error("boom")
        return real_decide(spec, *a, **k)

    monkeypatch.setattr(reconciler_module, "decide", decide)
    _two_policies(kube)
    c = make_controller(api, source, max_backoff_seconds=300)
    c.sync()
    now = time.time()
    report = c.reconciler.tick(now)
    assert report.reconciled == 1 and report.errors == 1
    assert _replicas(kube, "good") > 1
    ready = condition(status_of(kube, "bad"), "Ready")
    assert ready["status"] == "False" and ready["reason"] == "ReconcileError"
    assert error.__name__ in ready["message"] and "decide failed" in ready["message"]
    assert any(e["reason"] == "ReconcileError" for e in kube.items("", "events"))
    counted = c.metrics.policy_errors.labels("models", "bad", "decide", error.__name__)._value.get()
    assert counted == 1
    # exponential backoff from the policy's interval (15 s): 15, 30, 60 ...
    rt = c.reconciler.runtimes["models/bad"]
    delays = []
    t = now
    for _ in range(3):
        delays.append(rt.next_due - t)
        t = rt.next_due
        before = rt.failures
        c.reconciler.tick(t - 0.5)
        assert rt.failures == before, "not retried before its backoff ends"
        c.reconciler.tick(t)
        assert rt.failures == before + 1
    assert delays == [15.0, 30.0, 60.0]
    assert c.metrics.policy_errors.labels("models", "bad", "decide", error.__name__)._value.get() == 4


def test_an_unexpected_exception_reading_one_target_is_contained(kube, api, source, monkeypatch):
    real_read = DeploymentScale.read

    def read(self: DeploymentScale) -> Any:
        if self.name == "bad":
            raise ValueError("garbage from the API server")
        return real_read(self)

    monkeypatch.setattr(DeploymentScale, "read", read)
    _two_policies(kube)
    c = make_controller(api, source)
    report = c.run_once()
    assert report.reconciled == 1 and report.errors == 1
    assert _replicas(kube, "good") > 1
    msg = condition(status_of(kube, "bad"), "Ready")["message"]
    assert msg.startswith("read target failed: ValueError: garbage from the API server")


@pytest.mark.parametrize(
    "stored",
    [
        {"decisions": [[1, "a"]]},  # unreadable: from_dict raises
        {"lastWaiting": [1]},  # unreadable: IndexError
        {"panicUntil": "x"},  # readable, but breaks the decision (TypeError)
        {"lastTick": "x", "workPerRequest": {"a": 1}},
    ],
)
def test_a_corrupt_stored_state_is_discarded_with_a_warning_not_fatal(kube, api, source, stored):
    _two_policies(kube)
    bad = kube.get(GROUP, "modelscalingpolicies", "models", "bad")
    assert bad is not None
    bad["status"] = {"coreState": stored}
    kube.put(GROUP, "modelscalingpolicies", bad)
    c = make_controller(api, source)
    report = c.run_once()
    assert report.reconciled == 2 and report.errors == 0
    st = status_of(kube, "bad")
    assert condition(st, "Ready")["status"] == "True"
    assert st["coreState"]["decisions"], "a fresh state was written back"
    assert c.metrics.state_discarded._value.get() == 1
    reasons = [e["reason"] for e in kube.items("", "events") if e["involvedObject"]["name"] == "bad"]
    assert "StateDiscarded" in reasons


@pytest.mark.parametrize("conditions", ["x", [1, "a", None], {"type": "Ready"}])
def test_garbage_stored_conditions_are_replaced_not_fatal(kube, api, source, conditions):
    _two_policies(kube)
    bad = kube.get(GROUP, "modelscalingpolicies", "models", "bad")
    assert bad is not None
    bad["status"] = {"conditions": conditions, "coreState": {"decisions": [[1, "a"]]}}
    kube.put(GROUP, "modelscalingpolicies", bad)
    report = make_controller(api, source).run_once()
    assert report.reconciled == 2 and report.errors == 0
    assert condition(status_of(kube, "bad"), "Ready")["status"] == "True"


def test_a_hung_target_read_does_not_hold_up_the_other_policies(kube, api, source):
    """The API server accepts the request for one target and never answers: the tick still ends on time."""
    _two_policies(kube)
    kube.hang("GET", r"/deployments/bad/scale$", 30.0)
    # target reads through the API server (without the watch cache a read is a GET that can hang)
    c = make_controller(api, source, api_timeout_seconds=2.0, phase_budget_seconds=1.0, cache_targets=False)
    c.sync()
    started = time.monotonic()
    report = c.reconciler.tick(time.time())
    took = time.monotonic() - started
    assert took < 1.8, took
    assert report.reconciled == 1
    assert _replicas(kube, "good") > 1
    rt = c.reconciler.runtimes["models/bad"]
    assert rt.inflight is not None, "the slow read is left to finish on its own"
    assert c.reconciler.tick(time.time() + 100).due == 1, "and is not dispatched again while in flight"
    # the request timeout ends the hung call; the policy then reports it and backs off
    deadline = time.monotonic() + 10
    while rt.inflight is not None and not rt.inflight.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rt.inflight is not None and rt.inflight.done()
    assert time.monotonic() - started < 4, "the API call timed out after api_timeout_seconds"
    assert condition(status_of(kube, "bad"), "Ready")["reason"] == "APIError"
    assert rt.failures == 1


def test_every_api_call_carries_a_timeout(kube, api, source):
    """Status patches, events and target writes all end when the API server stops answering."""
    _two_policies(kube)
    kube.hang("PATCH", r"/modelscalingpolicies/good/status$", 30.0)
    c = make_controller(api, source, api_timeout_seconds=1.0, phase_budget_seconds=5.0)
    started = time.monotonic()
    report = c.run_once()
    assert time.monotonic() - started < 4
    assert report.reconciled == 2
    assert c.metrics.api_errors.labels(operation="patch status", code="ReadTimeoutError")._value.get() >= 1


def test_a_tick_that_fails_as_a_whole_still_moves_every_due_policy_to_its_next_slot(kube, api, source):
    """Before: a policy whose tick raised stayed due, and the loop retried it every 0.05 s."""
    _two_policies(kube)
    c = make_controller(api, source)
    c.sync()

    def broken() -> list[Any]:
        raise RuntimeError("pod cache exploded")

    c.reconciler.list_pods = broken
    now = time.time()
    with pytest.raises(RuntimeError):
        c.reconciler.tick(now)
    nxt = c.reconciler.next_due()
    assert nxt is not None and nxt >= now + 15


def test_healthz_fails_when_no_tick_completed_for_a_few_intervals(kube, api, source):
    _two_policies(kube)
    clock = [1000.0]
    c = make_controller(api, source, clock=lambda: clock[0], liveness_seconds=60)
    c.run_once()
    assert c.healthz() == (True, "ok")
    clock[0] += 59
    assert c.healthz()[0]
    clock[0] += 2
    ok, why = c.healthz()
    assert not ok and "no tick completed for 61s" in why


def test_a_policy_naming_a_prometheus_url_off_the_allow_list_says_so_in_its_status(kube, api):
    """The controller sends no request to a URL the chart did not allow; the policy holds and its
    MetricsAvailable condition names the field and the fix (not a generic 'metrics missing')."""
    from autoscaler.controller.metric_source import build_source

    add_gpu_node(kube)
    add_deployment(kube, "llama", replicas=2)
    add_policy(kube, name="llama", target="llama",
               metrics={"source": "prometheus", "prometheus": {"url": "http://169.254.169.254:9090"}})
    src = build_source("http://127.0.0.1:1", lambda key: [], allowed_prometheus_urls=())
    c = make_controller(api, src)
    c.sync()
    c.reconciler.tick(time.time())
    cond = condition(status_of(kube, "llama"), "MetricsAvailable")
    assert cond["status"] == "False" and "169.254.169.254" in cond["message"]
    assert "allow" in cond["message"].lower()
    assert _replicas(kube, "llama") == 2  # held: unknown data never scales down
