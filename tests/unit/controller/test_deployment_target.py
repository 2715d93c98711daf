"""The controller against a fake API server: Deployment targets, failures, status, events, safety."""

from __future__ import annotations

import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from autoscaler.controller.reconciler import MAX_CONFLICT_RETRIES
from autoscaler.targets.scale import DeploymentScale
from tests.unit.controller.conftest import (
    GROUP,
    CountingSource,
    add_deployment,
    add_gpu_node,
    add_policy,
    condition,
    make_controller,
    status_of,
)
from tests.unit.controller.fakeapi import FakeKube

SCALE = r"/apis/apps/v1/namespaces/models/deployments/llama/scale$"


def replicas(
    kube: FakeKube, name: str = "llama", ns: str = "models", group: str = "apps", plural: str = "deployments"
) -> int:
    obj = kube.get(group, plural, ns, name)
    assert obj is not None
    return int(obj["spec"]["replicas"])


def test_scales_a_deployment_up_through_the_scale_subresource_and_records_why(kube, api, source):
    add_gpu_node(kube)
    add_deployment(kube, replicas=1)
    add_policy(kube)
    report = make_controller(api, source).run_once()
    assert report.writes == 1
    st = status_of(kube)
    assert replicas(kube) == st["desiredReplicas"] > 1
    assert st["currentReplicas"] == 1
    assert st["lastDecision"]["applied"] is True and st["lastDecision"]["reason"].startswith("ScaleUp")
    assert st["observedGeneration"] == 1
    assert "coreState" in st and st["coreState"]["decisions"]
    assert condition(st, "Ready")["status"] == "True"
    assert condition(st, "TargetFound")["status"] == "True"
    assert condition(st, "MetricsAvailable")["status"] == "True"
    assert condition(st, "ScalingActive")["status"] == "True"
    assert kube.calls("PUT", SCALE), "the write goes through /scale"
    events = kube.items("", "events")
    assert [e["reason"] for e in events] == ["ScaledUp"]
    assert events[0]["involvedObject"]["kind"] == "ModelScalingPolicy"


def test_write_carries_the_read_resource_version_and_a_409_is_retried_on_fresh_state(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    kube.fail("PUT", SCALE, 409, times=1)
    report = make_controller(api, source).run_once()
    assert report.writes == 1 and report.errors == 0
    assert len(kube.calls("PUT", SCALE)) == 2
    # the first read comes from the Deployment watch cache; after the conflict the Scale is read afresh
    assert len(kube.calls("GET", SCALE)) == 1
    assert replicas(kube) == status_of(kube)["desiredReplicas"]


def test_a_stale_resource_version_really_conflicts(kube, api, source):
    """Another writer changes the Deployment between our read and our write: its change is not lost."""
    add_deployment(kube, replicas=1)
    add_policy(kube)
    c = make_controller(api, source)
    c.sync()
    target = DeploymentScale(client.AppsV1Api(api), "models", "llama")
    reading = target.read()
    kube.put(
        "apps",
        "deployments",
        {
            **kube.get("apps", "deployments", "models", "llama"),
            "spec": {"replicas": 7, "selector": {"matchLabels": {"app": "llama"}}},
        },
    )
    with pytest.raises(ApiException) as e:
        target.write(3, reading)
    assert e.value.status == 409
    assert replicas(kube) == 7


def test_persistent_conflicts_give_up_after_a_bounded_number_of_retries_and_keep_the_last_state(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    kube.fail("PUT", SCALE, 409, times=100)
    c = make_controller(api, source)
    report = c.run_once()
    assert report.writes == 0 and report.errors == 1
    assert len(kube.calls("PUT", SCALE)) == MAX_CONFLICT_RETRIES + 1
    rt = c.reconciler.runtimes["models/llama"]
    assert rt.state is not None and rt.state.decisions == ()  # what was not applied is not remembered
    assert replicas(kube) == 1


def test_server_errors_back_off_exponentially_and_keep_the_last_good_state(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    now = [time.time()]
    # target reads through the API server: with the watch cache a read makes no call that could fail
    c = make_controller(api, source, clock=lambda: now[0], max_backoff_seconds=100, cache_targets=False)
    c.run_once()
    good = status_of(kube)["coreState"]
    rt = c.reconciler.runtimes["models/llama"]
    kube.fail("GET", SCALE, 500, times=100)
    delays = []
    for _ in range(5):
        now[0] = rt.next_due
        c.reconciler.tick(now[0])
        delays.append(rt.next_due - now[0])
    assert delays == [15, 30, 60, 100, 100]  # doubling from the interval, capped
    st = status_of(kube)
    assert st["coreState"] == good
    assert condition(st, "Ready")["status"] == "False" and condition(st, "Ready")["reason"] == "APIError"
    assert "HTTP 500" in condition(st, "Ready")["message"]


def test_forbidden_write_keeps_the_last_state_and_reports_an_event(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    kube.fail("PUT", SCALE, 403, times=1)
    c = make_controller(api, source)
    c.run_once()
    assert replicas(kube) == 1
    state = c.reconciler.runtimes["models/llama"].state
    assert state is not None and state.decisions == ()
    assert "ScaleFailed" in [e["reason"] for e in kube.items("", "events")]
    assert condition(status_of(kube), "Ready")["reason"] == "APIError"


def test_missing_target_sets_target_found_false_and_writes_nothing(kube, api, source):
    add_policy(kube, target="does-not-exist")
    make_controller(api, source).run_once()
    st = status_of(kube)
    tf = condition(st, "TargetFound")
    assert tf["status"] == "False" and tf["reason"] == "TargetNotFound"
    assert "does-not-exist" in tf["message"]
    assert not kube.calls("PUT") and not kube.calls("PATCH", "/scale")
    assert "TargetNotFound" in [e["reason"] for e in kube.items("", "events")]


def test_dry_run_flag_records_the_decision_and_never_writes_the_target(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    make_controller(api, source, dry_run=True).run_once()
    assert replicas(kube) == 1
    assert not kube.calls("PUT", "/scale") and not kube.calls("PATCH", "/scale")
    st = status_of(kube)
    assert st["desiredReplicas"] > 1 and st["lastDecision"]["dryRun"] is True
    assert st["lastDecision"]["applied"] is False
    assert condition(st, "ScalingActive")["reason"] == "DryRun"
    assert "DryRun" in [e["reason"] for e in kube.items("", "events")]


def test_per_policy_dry_run_never_writes_the_target(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube, dryRun=True)
    make_controller(api, source).run_once()
    assert replicas(kube) == 1
    assert not [c for c in kube.calls() if c[0] in ("PUT", "PATCH") and "/deployments/" in c[1]]


def test_an_invalid_policy_gets_a_readable_condition_and_the_others_still_scale(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    bad = add_policy(kube, name="broken", replicas={"min": 5, "max": 2})
    assert bad
    report = make_controller(api, source).run_once()
    assert report.invalid == 1 and report.writes == 1
    st = status_of(kube, "broken")
    ready = condition(st, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "InvalidSpec"
    assert "replicas" in ready["message"] and "min (5) must be ≤ max (2)" in ready["message"]


def test_a_target_ref_cannot_name_another_namespace(kube, api, source):
    add_deployment(kube, namespace="other", replicas=1)
    p = add_policy(kube)
    p["spec"]["targetRef"]["namespace"] = "other"
    kube.put(GROUP, "modelscalingpolicies", p)
    make_controller(api, source).run_once()
    ready = condition(status_of(kube), "Ready")
    assert ready["reason"] == "InvalidSpec" and "targetRef.namespace" in ready["message"]
    assert not [c for c in kube.calls() if "/namespaces/other/" in c[1]]


def test_a_policy_only_finds_targets_in_its_own_namespace(kube, api, source):
    add_deployment(kube, namespace="other", replicas=1)  # same name, other namespace
    add_policy(kube)
    make_controller(api, source).run_once()
    assert condition(status_of(kube), "TargetFound")["status"] == "False"
    assert not [c for c in kube.calls() if "/namespaces/other/" in c[1]]
    assert replicas(kube, ns="other") == 1


def test_many_policies_share_one_metrics_collect_per_tick(kube, api):
    source = CountingSource()
    for i in range(20):
        add_deployment(kube, name=f"m{i}", replicas=1)
        add_policy(kube, name=f"m{i}", target=f"m{i}")
    make_controller(api, source).run_once()
    assert len(source.calls) == 1 and len(source.calls[0]) == 20


def test_a_failing_metric_source_holds_and_says_metrics_are_missing(kube, api):
    source = CountingSource()
    source.fail = True
    add_deployment(kube, replicas=3)
    add_policy(kube)
    make_controller(api, source).run_once()
    st = status_of(kube)
    assert replicas(kube) == 3 and st["desiredReplicas"] == 3
    ma = condition(st, "MetricsAvailable")
    assert ma["status"] == "False" and "prometheus down" in ma["message"]


def test_restart_restores_core_state_from_status(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    t0 = float(round(time.time()))  # the persisted state keeps milliseconds
    first = make_controller(api, source, clock=lambda: t0)
    first.run_once()
    saved = first.reconciler.runtimes["models/llama"].state
    assert saved is not None and saved.decisions
    second = make_controller(api, source, clock=lambda: t0 + 15, identity="restarted")
    second.run_once()
    restored = second.reconciler.runtimes["models/llama"].state
    assert restored is not None
    assert restored.decisions[: len(saved.decisions)] == saved.decisions  # history carried over
    assert len(restored.decisions) == len(saved.decisions) + 1
    assert status_of(kube)["coreState"]["decisions"][0][0] == round(t0, 3)


def test_condition_transition_time_changes_only_when_status_changes(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    now = [time.time()]
    c = make_controller(api, source, clock=lambda: now[0])
    c.run_once()
    first = condition(status_of(kube), "Ready")["lastTransitionTime"]
    now[0] += 30
    c.reconciler.tick(now[0])
    assert condition(status_of(kube), "Ready")["lastTransitionTime"] == first
    kube.fail("GET", SCALE, 500, times=1)
    now[0] += 30
    c.reconciler.tick(now[0])
    assert condition(status_of(kube), "Ready")["lastTransitionTime"] != first


def test_repeated_problems_are_deduplicated_into_one_event(kube, api, source):
    add_policy(kube, target="missing")
    now = [time.time()]
    c = make_controller(api, source, clock=lambda: now[0])
    c.sync()
    for _ in range(5):
        c.reconciler.tick(now[0])
        now[0] += 15
    assert [e["reason"] for e in kube.items("", "events")] == ["TargetNotFound"]


def test_a_repeated_problem_after_the_rate_limit_updates_the_event_count(kube, api, source):
    add_policy(kube, target="missing")
    now = [time.time()]
    c = make_controller(api, source, clock=lambda: now[0])
    c.sync()
    c.reconciler.tick(now[0])
    now[0] += 61
    c.reconciler.tick(now[0])
    (event,) = kube.items("", "events")
    assert event["count"] == 2 and kube.calls("PATCH", "/events/")
