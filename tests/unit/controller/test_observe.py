"""Cold-start observation from pods, events and nodes (pure functions over dicts)."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.observe import ColdStartObserver, LabelSelector, cluster_facts, gpu_usage_by_node, replica_counts
from autoscaler.observe.coldstart import node_ready_times
from autoscaler.observe.pods import starting_stage
from autoscaler.observe.pull_events import parse_go_duration, parse_pulled
from autoscaler.observe.timefmt import format_time

T0 = 1_700_000_000.0


def at(seconds: float) -> str:
    return format_time(T0 + seconds)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("393ms", 0.393),
        ("2.14s", 2.14),
        ("1m3.5s", 63.5),
        ("1h2m3s", 3723.0),
        ("1.5µs", 1.5e-6),
        ("", None),
        ("3x", None),
    ],
)
def test_go_durations(text, seconds):
    assert parse_go_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_pulled_messages_of_every_kubelet_generation():
    new = parse_pulled('Successfully pulled image "vllm:1" in 1m3.5s (1m10s including waiting). Image size: 9 bytes.')
    assert new is not None and new.seconds == 70.0 and not new.cached and new.image == "vllm:1"
    old = parse_pulled('Successfully pulled image "vllm:1" in 393ms')
    assert old is not None and old.seconds == pytest.approx(0.393)
    cached = parse_pulled('Container image "vllm:1" already present on machine and can be accessed by the pod')
    assert cached is not None and cached.cached and cached.seconds == 0.0
    assert parse_pulled('Pulling image "vllm:1"') is None


def test_set_based_selectors():
    sel = LabelSelector("app=llama,tier in (gpu, big),!canary,env!=dev")
    assert sel.matches({"app": "llama", "tier": "gpu", "env": "prod"})
    assert not sel.matches({"app": "llama", "tier": "cpu"})
    assert not sel.matches({"app": "llama", "tier": "gpu", "canary": "1"})
    assert LabelSelector("").matches({})


def cold_pod(**over):
    p = {
        "metadata": {"uid": "u1", "name": "p", "namespace": "m", "creationTimestamp": at(0)},
        "spec": {"nodeName": "n1", "containers": [{"name": "engine", "image": "vllm:1"}]},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(90)},
                {"type": "Ready", "status": "True", "lastTransitionTime": at(400)},
            ],
            "initContainerStatuses": [
                {
                    "name": "storage-initializer",
                    "state": {"terminated": {"exitCode": 0, "startedAt": at(100), "finishedAt": at(160)}},
                }
            ],
            "containerStatuses": [{"name": "engine", "state": {"running": {"startedAt": at(340)}}}],
        },
    }
    p.update(over)
    return p


PULLED = {
    "reason": "Pulled",
    "involvedObject": {"kind": "Pod", "uid": "u1", "fieldPath": "spec.containers{engine}"},
    "message": 'Successfully pulled image "vllm:1" in 2m58s (3m including waiting)',
    "lastTimestamp": at(340),
}


def test_every_stage_of_a_cold_pod_is_reported_once():
    obs = ColdStartObserver()
    obs.note_pod(
        {
            "metadata": {"uid": "u1"},
            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
        }
    )
    first = obs.observe("m/p", [cold_pod()], {"u1": [PULLED]}, {"n1": T0 + 80})
    got = {(o.stage, o.situation): o.seconds for o in first}
    assert got == {
        ("node_provisioning", "default"): 90.0,
        ("image_pull", "uncached"): 180.0,
        ("weight_load", "default"): 60.0,
        ("warmup", "default"): 60.0,
    }
    assert obs.observe("m/p", [cold_pod()], {"u1": [PULLED]}, {}) == ()


def test_a_pod_on_an_existing_node_was_only_scheduling():
    obs = ColdStartObserver()
    out = obs.observe("m/p", [cold_pod()], {}, {"n1": T0 - 86400})
    assert ("scheduling", 90.0) in [(o.stage, o.seconds) for o in out]


def test_a_pod_that_waited_then_landed_on_an_older_node_did_not_wait_for_a_node():
    """FailedScheduling then a node older than the pod (a GPU freed, or the scheduler's node cache lagged):
    its wait is scheduling; a few seconds counted as node provisioning would shorten the learned lead time."""
    obs = ColdStartObserver()
    obs.note_pod({"metadata": {"uid": "u1"},
                  "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})
    failed = {"reason": "FailedScheduling", "involvedObject": {"kind": "Pod", "uid": "u1"}, "lastTimestamp": at(1)}
    out = obs.observe("m/p", [cold_pod()], {"u1": [failed]}, {"n1": T0 - 5})
    assert [(o.stage, o.seconds) for o in out if o.stage in ("scheduling", "node_provisioning")] == [
        ("scheduling", 90.0)]


def test_a_pod_that_landed_on_a_node_still_booting_when_it_was_created_reports_no_node_stage():
    """Karpenter launched the node for an earlier pod; this one was created after the node registered (T0 - 5)
    but before it was Ready (T0 + 60), so its 90 s is the end of a boot: no sample of either node stage."""
    ready = node_ready_times([{"metadata": {"name": "n1"}, "status": {"conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": at(60)}]}}])
    assert ready == {"n1": T0 + 60}
    out = ColdStartObserver().observe("m/p", [cold_pod()], {}, {"n1": T0 - 5}, node_ready=ready)
    assert {o.stage for o in out} == {"weight_load", "warmup"}
    # Ready before the pod was created: it only waited for scheduling.
    out = ColdStartObserver().observe("m/p", [cold_pod()], {}, {"n1": T0 - 5}, node_ready={"n1": T0 - 1})
    assert ("scheduling", 90.0) in [(o.stage, o.seconds) for o in out]
    # Ready again only after the pod was scheduled (T0 + 90): a later flap of the node, not the pod's wait.
    out = ColdStartObserver().observe("m/p", [cold_pod()], {}, {"n1": T0 - 5}, node_ready={"n1": T0 + 300})
    assert ("scheduling", 90.0) in [(o.stage, o.seconds) for o in out]
    # A node created after the pod: node provisioning, whenever it became Ready.
    out = ColdStartObserver().observe("m/p", [cold_pod()], {}, {"n1": T0 + 30}, node_ready=ready)
    assert ("node_provisioning", 90.0) in [(o.stage, o.seconds) for o in out]


def test_node_ready_times_skip_nodes_not_ready_and_unreadable_times():
    nodes: list[dict[str, Any]] = [
        {"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready", "status": "False",
                                                               "lastTransitionTime": at(1)}]}},
        {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "True",
                                                               "lastTransitionTime": "yesterday"}]}},
        {"metadata": {"name": "c"}, "status": {}},
        {"metadata": {}, "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at(2)}]}},
        {"metadata": {"name": "d"}, "status": {"conditions": [
            {"type": "MemoryPressure", "status": "True", "lastTransitionTime": at(3)},
            {"type": "Ready", "status": "True", "lastTransitionTime": at(4)}]}},
    ]
    assert node_ready_times(nodes) == {"d": T0 + 4}


def test_without_the_node_the_pods_own_history_decides_its_node_stage():
    waited = ColdStartObserver()
    waited.note_pod({"metadata": {"uid": "u1"},
                     "status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                                "reason": "Unschedulable"}]}})
    assert ("node_provisioning", 90.0) in [(o.stage, o.seconds) for o in waited.observe("k", [cold_pod()], {}, {})]
    scaled = {"reason": "TriggeredScaleUp", "involvedObject": {"kind": "Pod", "uid": "u1"}, "lastTimestamp": at(5)}
    out = ColdStartObserver().observe("k", [cold_pod()], {"u1": [scaled]}, {})
    assert ("node_provisioning", 90.0) in [(o.stage, o.seconds) for o in out]
    out = ColdStartObserver().observe("k", [cold_pod()], {}, {})
    assert ("scheduling", 90.0) in [(o.stage, o.seconds) for o in out]


def test_an_engine_that_crashed_before_it_was_ready_counts_its_start_from_the_first_attempt():
    """Seen running at 340 (first attempt), crashed, restarted at 600 and Ready at 660: the warmup is 320 s,
    not the last attempt's 60 s. A fresh observer, which never saw the first attempt, says 60 s as before."""
    first = cold_pod()
    first["status"]["conditions"] = first["status"]["conditions"][:1]  # scheduled, not ready yet
    later = cold_pod()
    later["status"]["containerStatuses"] = [{
        "name": "engine", "restartCount": 1, "state": {"running": {"startedAt": at(600)}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "OOMKilled", "startedAt": at(340),
                                     "finishedAt": at(500)}}}]
    later["status"]["conditions"][1]["lastTransitionTime"] = at(660)
    obs = ColdStartObserver()
    assert {o.stage for o in obs.observe("k", [first], {}, {})} == {"scheduling", "weight_load"}
    out = {o.stage: o.seconds for o in obs.observe("k", [later], {}, {})}
    assert out == {"warmup": 320.0}
    assert {o.stage: o.seconds for o in ColdStartObserver().observe("k", [later], {}, {})}["warmup"] == 60.0
    assert obs.observe("k", [later], {}, {}) == ()  # reported once
    # Pods that are gone are forgotten, first attempts included (the memory stays bounded).
    obs.forget_except(set())
    assert {o.stage: o.seconds for o in obs.observe("k2", [later], {}, {})}["warmup"] == 60.0


def test_a_pull_retried_after_errors_counts_from_the_first_attempt():
    """`Pulling` three times from 100 (ErrImagePull, back-off), `Pulled` at 340 timing its last attempt at
    180 s: the image stage took 240 s. One attempt, or a container that restarted (it may have pulled again
    under imagePullPolicy Always), keeps the message's 180 s."""
    def pulling(count: object) -> dict[str, Any]:
        return {"reason": "Pulling", "involvedObject": {"kind": "Pod", "uid": "u1",
                                                        "fieldPath": "spec.containers{engine}"},
                "message": 'Pulling image "vllm:1"', "firstTimestamp": at(100), "lastTimestamp": at(160),
                "count": count}

    def pull_seconds(pod: dict[str, Any], events: list[dict[str, Any]]) -> float:
        out = ColdStartObserver().observe("k", [pod], {"u1": list(events)}, {})
        return next(o.seconds for o in out if o.stage == "image_pull")

    assert pull_seconds(cold_pod(), [pulling(3), PULLED]) == 240.0
    assert pull_seconds(cold_pod(), [pulling(1), PULLED]) == 180.0
    assert pull_seconds(cold_pod(), [pulling(None), PULLED]) == 180.0
    assert pull_seconds(cold_pod(), [pulling(True), PULLED]) == 180.0
    assert pull_seconds(cold_pod(), [pulling(2), pulling(1), PULLED]) == 240.0  # two folded events
    restarted = cold_pod()
    restarted["status"]["containerStatuses"][0]["restartCount"] = 1
    assert pull_seconds(restarted, [pulling(3), PULLED]) == 180.0
    # A Pulling event about an init container or with no time says nothing about the main image.
    init = {**pulling(3), "involvedObject": {"kind": "Pod", "uid": "u1",
                                             "fieldPath": "spec.initContainers{storage-initializer}"}}
    timeless = {**pulling(3), "firstTimestamp": None, "lastTimestamp": None}
    assert pull_seconds(cold_pod(), [init, timeless, PULLED]) == 180.0


def test_the_event_cache_keeps_pulls_with_their_counts_and_drops_the_rest():
    from autoscaler.controller.manager import keep_event

    ev = {"reason": "Pulling", "count": 3, "firstTimestamp": at(100), "source": {"component": "kubelet"},
          "involvedObject": {"kind": "Pod", "uid": "u1", "fieldPath": "spec.containers{engine}"}}
    kept = keep_event(ev)
    assert kept is not None and kept["count"] == 3 and kept["firstTimestamp"] == at(100) and "source" not in kept
    assert keep_event({**ev, "reason": "Scheduled"}) is None


def test_without_an_init_container_container_start_to_ready_is_warmup_unless_annotated():
    p = cold_pod()
    del p["status"]["initContainerStatuses"]
    out = {o.stage: o.seconds for o in ColdStartObserver().observe("k", [p], {}, {})}
    assert out["warmup"] == 60.0 and "weight_load" not in out
    p["metadata"]["annotations"] = {"autoscaler.inference.dev/weights-loaded-at": at(370)}
    p["metadata"]["uid"] = "u2"
    out = {o.stage: o.seconds for o in ColdStartObserver().observe("k", [p], {}, {})}
    assert out["weight_load"] == 30.0 and out["warmup"] == 30.0


def test_a_restored_watermark_skips_stages_reported_before_a_restart():
    obs = ColdStartObserver()
    obs.restore_watermark("k", T0 + 200)
    out = obs.observe("k", [cold_pod()], {"u1": [PULLED]}, {})
    assert {o.stage for o in out} == {"image_pull", "warmup"}  # finished at 340 and 400, after the mark
    assert obs.watermark("k") == T0 + 400


def test_stage_of_starting_pods():
    pending = {
        "metadata": {"creationTimestamp": at(0)},
        "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    }
    s = starting_stage(pending, T0 + 50)
    assert (s.stage, s.unschedulable, s.age_seconds) == ("node_provisioning", True, 50.0)
    loading = cold_pod()
    loading["status"]["conditions"] = loading["status"]["conditions"][:1]
    loading["status"]["initContainerStatuses"][0]["state"] = {"running": {"startedAt": at(100)}}
    loading["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "PodInitializing"}}
    s = starting_stage(loading, T0 + 130)
    assert (s.stage, s.stage_age_seconds) == ("weight_load", 30.0)
    pulling = cold_pod()
    del pulling["status"]["initContainerStatuses"]
    pulling["status"]["conditions"] = pulling["status"]["conditions"][:1]
    pulling["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "ContainerCreating"}}
    assert starting_stage(pulling, T0 + 100).stage == "image_pull"


def test_replica_counts():
    ready = cold_pod()
    terminating = cold_pod(metadata={"deletionTimestamp": at(1)})
    done = cold_pod(status={"phase": "Succeeded"})
    starting = {"metadata": {"creationTimestamp": at(0)}, "status": {}}
    c = replica_counts(4, [ready, terminating, done, starting], T0 + 10)
    assert (c.desired, c.ready, c.terminating, len(c.starting)) == (4, 1, 1, 1)


def node(name, gpus, labels=None, taints=None, images=(), ready=True):
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "images": [{"names": list(images)}],
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_free_replica_slots_count_whole_replicas_per_fitting_node():
    template = {
        "spec": {
            "nodeSelector": {"pool": "h100"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"image": "vllm:1"}],
        }
    }
    gpu_taint = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    nodes = [
        node("a", 8, {"pool": "h100"}, gpu_taint, images=["vllm:1"]),  # 3 used -> 5 free
        node("b", 8, {"pool": "h100"}, [{"key": "other", "effect": "NoSchedule"}]),  # taint not tolerated
        node("c", 8, {"pool": "a10"}),  # wrong pool
        node("d", 8, {"pool": "h100"}, ready=False),
    ]
    used = gpu_usage_by_node(
        [
            {
                "spec": {"nodeName": "a", "containers": [{"resources": {"requests": {"nvidia.com/gpu": "3"}}}]},
                "status": {"phase": "Running"},
            }
        ]
    )
    facts = cluster_facts(template, nodes, used, gpus_per_replica=2)
    assert facts.free_replica_slots == 2 and facts.image_cached is True
    assert cluster_facts(None, nodes, used, 2).free_replica_slots is None
