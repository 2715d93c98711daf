"""The observers under fuzzing. Pods, events and nodes are shaped as the API server sends them (the
schema's types): the cold-start ones are built around a consistent start (created → scheduled → pulled →
started → ready, at random offsets that may also run backwards), the GPU ones around a schedulable fleet;
then any of their fields is dropped, set to None or to a value of the right type that means nothing.
Nothing raises; the cold-start observer reports only stages it knows, each of a pod once, with finite
durations that are not negative; cluster facts count whole free slots within the nodes' GPUs."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, get_args

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from autoscaler.core.signals import Stage
from autoscaler.observe import ColdStartObserver, cluster_facts, gpu_usage_by_node, replica_counts
from autoscaler.observe.coldstart import events_by_pod_uid, node_creation_times, node_ready_times
from autoscaler.observe.nodes import leaving_reason
from autoscaler.observe.timefmt import format_time

T0 = 1_700_000_000.0
STAGES = set(get_args(Stage))
SITUATIONS = {"default", "warm", "cached", "uncached"}
# What a field of each schema type may hold besides a good value: absent ("drop"), null, or a value of the
# right type that means nothing (an empty or unparseable string, a negative count, an empty object).
BAD: dict[str, list[Any]] = {
    "time": ["drop", None, "", "yesterday", "2023-13-01T00:00:00Z", "2023-11-14T22:13:20.5+02:00"],
    "str": ["drop", None, "", "spec.containers{", "x"],
    "int": ["drop", None, -1, 0],
    "obj": ["drop", None, {}],
    "list": ["drop", None, []],
    "bool": ["drop", None, False],
}


def at(s: int) -> str:
    return format_time(T0 + s)


def _spoil(obj: Any, path: tuple[str, ...], value: Any) -> None:
    """Set `obj[path]` to `value` (drop the key for the sentinel "drop"), if the path exists."""
    *head, last = path
    for k in head:
        obj = obj.get(k) if isinstance(obj, dict) else (obj[0] if isinstance(obj, list) and obj else None)
        if obj is None:
            return
    if isinstance(obj, list):
        obj = obj[0] if obj else None
    if not isinstance(obj, dict):
        return
    if value == "drop":
        obj.pop(last, None)
    else:
        obj[last] = value


def _spoil_all(obj: dict[str, Any], fields: list[tuple[tuple[str, ...], str]], picks: list[tuple[int, int]]) -> None:
    for i, j in picks:
        path, kind = fields[i % len(fields)]
        _spoil(obj, path, BAD[kind][j % len(BAD[kind])])


POD_FIELDS = [
    (("metadata", "uid"), "str"), (("metadata", "creationTimestamp"), "time"),
    (("metadata", "deletionTimestamp"), "time"), (("metadata", "annotations"), "obj"),
    (("metadata", "annotations", "autoscaler.inference.dev/weights-loaded-at"), "time"),
    (("spec", "nodeName"), "str"), (("spec", "containers"), "list"), (("spec", "containers", "name"), "str"),
    (("status", "phase"), "str"), (("status", "conditions"), "list"),
    (("status", "conditions", "lastTransitionTime"), "time"), (("status", "conditions", "status"), "str"),
    (("status", "containerStatuses"), "list"), (("status", "containerStatuses", "name"), "str"),
    (("status", "containerStatuses", "restartCount"), "int"), (("status", "containerStatuses", "state"), "obj"),
    (("status", "containerStatuses", "state", "running"), "obj"),
    (("status", "containerStatuses", "state", "running", "startedAt"), "time"),
    (("status", "initContainerStatuses"), "list"), (("status", "initContainerStatuses", "state"), "obj"),
    (("status", "initContainerStatuses", "name"), "str"),
    (("status", "initContainerStatuses", "state", "terminated", "finishedAt"), "time"),
]
EVENT_FIELDS = [
    (("reason",), "str"), (("message",), "str"), (("count",), "int"), (("firstTimestamp",), "time"),
    (("lastTimestamp",), "time"), (("involvedObject",), "obj"), (("involvedObject", "uid"), "str"),
    (("involvedObject", "fieldPath"), "str"), (("involvedObject", "kind"), "str"),
]
NODE_FIELDS = [
    (("metadata", "name"), "str"), (("metadata", "creationTimestamp"), "time"), (("status", "conditions"), "list"),
    (("status", "conditions", "lastTransitionTime"), "time"), (("status", "conditions", "status"), "str"),
]

spoils = st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)), max_size=3)


@st.composite
def pods(draw: st.DrawFn, uid: str) -> dict[str, Any]:
    created = draw(st.integers(-50, 200))
    sched, start, ready = (created + draw(st.integers(-5, 300)) for _ in range(3))
    init = draw(st.booleans())
    running = draw(st.booleans())
    pod: dict[str, Any] = {
        "metadata": {"uid": uid, "namespace": "ns", "creationTimestamp": at(created),
                     "annotations": ({"autoscaler.inference.dev/weights-loaded-at": at(start + 5)}
                                     if draw(st.booleans()) else {})},
        "spec": {"nodeName": draw(st.sampled_from(["n1", "n2"])), "containers": [{"name": "engine"}]},
        "status": {
            "phase": "Running" if running else "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": draw(st.sampled_from(["True", "False"])),
                 "reason": "Unschedulable", "lastTransitionTime": at(sched)},
                *([{"type": "Ready", "status": "True", "lastTransitionTime": at(ready)}]
                  if draw(st.booleans()) else []),
            ],
            "containerStatuses": [{"name": "engine", "restartCount": draw(st.integers(0, 2)),
                                   "state": {"running": {"startedAt": at(start)}} if running
                                   else {"waiting": {"reason": "CrashLoopBackOff"}}}],
            "initContainerStatuses": ([{"name": "storage-initializer", "state": {"terminated": {
                "exitCode": 0, "startedAt": at(sched + 1), "finishedAt": at(start - 1)}}}] if init else []),
        },
    }
    _spoil_all(pod, POD_FIELDS, draw(spoils))
    return pod


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    t = draw(st.integers(-50, 400))
    reason = draw(st.sampled_from(["Pulled", "Pulling", "FailedScheduling", "TriggeredScaleUp", "Other"]))
    message = draw(st.sampled_from([
        f'Successfully pulled image "v:1" in {t % 97}s ({t % 97 + 1}s including waiting)',
        'Container image "v:1" already present on machine', 'Pulling image "v:1"', "pulled in 3x", ""]))
    ev: dict[str, Any] = {
        "reason": reason, "message": message, "count": draw(st.integers(0, 4)),
        "firstTimestamp": at(t - draw(st.integers(0, 100))), "lastTimestamp": at(t),
        "involvedObject": {"kind": "Pod", "uid": draw(st.sampled_from(["u1", "u2"])),
                           "fieldPath": draw(st.sampled_from(["spec.containers{engine}",
                                                              "spec.initContainers{storage-initializer}", ""]))},
    }
    _spoil_all(ev, EVENT_FIELDS, draw(spoils))
    return ev


@st.composite
def nodes(draw: st.DrawFn) -> dict[str, Any]:
    node: dict[str, Any] = {
        "metadata": {"name": draw(st.sampled_from(["n1", "n2"])),
                     "creationTimestamp": at(draw(st.integers(-100, 200)))},
        "status": {"conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": at(draw(st.integers(-100, 300)))}]},
    }
    _spoil_all(node, NODE_FIELDS, draw(spoils))
    return node


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ticks=st.lists(st.tuples(st.lists(st.sampled_from(["u1", "u2"]).flatmap(pods), max_size=2),
                                st.lists(events(), max_size=4)), min_size=1, max_size=3),
       node_list=st.lists(nodes(), max_size=2))
def test_the_observer_never_raises_and_reports_known_finite_stages_once(
        ticks: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]], node_list: list[dict[str, Any]]) -> None:
    obs = ColdStartObserver()
    created, ready = node_creation_times(node_list), node_ready_times(node_list)
    assert all(math.isfinite(t) for t in [*created.values(), *ready.values()])
    reported: Counter[str] = Counter()
    uids: set[object] = set()
    for pod_list, event_list in ticks:
        for p in pod_list:
            obs.note_pod(p)
        out = obs.observe("ns/p", pod_list, events_by_pod_uid(event_list), created, None, 60.0, ready)
        for o in out:
            assert o.stage in STAGES and o.situation in SITUATIONS, o
            assert math.isfinite(o.seconds) and o.seconds >= 0, o
        reported.update(o.stage for o in out)
        uids |= {(p.get("metadata") or {}).get("uid") for p in pod_list}
        # Each pod's stage is reported once, however often the pod is seen again.
        assert all(n <= len(uids) for n in reported.values()), (reported, uids)
        event(f"reported {len(out)} stage(s)")
        counts = replica_counts(3, pod_list, T0 + 100)
        assert counts.ready + len(counts.starting) + counts.terminating <= len(pod_list)
        assert all(s.age_seconds >= 0 and s.stage_age_seconds >= 0 for s in counts.starting)
    obs.forget_except(set())


def test_the_fuzzed_pods_reach_every_stage() -> None:
    """The strategies above are not vacuous: valid draws report every stage."""
    seen: set[str] = set()

    @settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(pod=pods("u1"), evs=st.lists(events(), max_size=4), node_list=st.lists(nodes(), max_size=2))
    def collect(pod: dict[str, Any], evs: list[dict[str, Any]], node_list: list[dict[str, Any]]) -> None:
        out = ColdStartObserver().observe("k", [pod], events_by_pod_uid(evs), node_creation_times(node_list),
                                          None, 60.0, node_ready_times(node_list))
        seen.update(o.stage for o in out)

    collect()
    assert seen == STAGES, seen


@st.composite
def gpu_nodes(draw: st.DrawFn) -> dict[str, Any]:
    taint = {"key": draw(st.sampled_from(["nvidia.com/gpu", "node.kubernetes.io/unschedulable"])),
             "value": draw(st.sampled_from(["present", ""])),
             "effect": draw(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]))}
    node: dict[str, Any] = {
        "metadata": {"name": draw(st.sampled_from(["n1", "n2"])),
                     "labels": {"pool": draw(st.sampled_from(["a", "b"]))}},
        "spec": {"unschedulable": draw(st.booleans()), "taints": [taint] if draw(st.booleans()) else []},
        "status": {"conditions": [{"type": "Ready", "status": draw(st.sampled_from(["True", "False"]))}],
                   "allocatable": {"nvidia.com/gpu": draw(st.sampled_from(["8", "0", "4", "1k", "2.5"]))},
                   "images": [{"names": [draw(st.sampled_from(["reg/vllm:1", "vllm:1", "other"]))]}]},
    }
    _spoil_all(node, [
        (("metadata", "name"), "str"), (("metadata", "labels"), "obj"), (("spec", "unschedulable"), "bool"),
        (("spec", "taints"), "list"), (("spec", "taints", "key"), "str"), (("spec", "taints", "value"), "str"),
        (("spec", "taints", "effect"), "str"), (("status", "conditions"), "list"), (("status", "allocatable"), "obj"),
        (("status", "allocatable", "nvidia.com/gpu"), "str"), (("status", "images"), "list"),
        (("status", "images", "names"), "list"),
    ], draw(spoils))
    return node


@st.composite
def gpu_pods(draw: st.DrawFn) -> dict[str, Any]:
    gpus = draw(st.sampled_from(["1", "2", "0", "x"]))
    pod: dict[str, Any] = {
        "spec": {"nodeName": draw(st.sampled_from(["n1", "n2", ""])), "nodeSelector": {"pool": "a"},
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": draw(st.sampled_from(["Exists", "Equal"])),
                                  "value": "present", "effect": draw(st.sampled_from(["NoSchedule", "NoExecute", ""])),
                                  "tolerationSeconds": draw(st.sampled_from([None, 300]))}],
                 "containers": [{"image": "vllm:1", "resources": {"requests": {"nvidia.com/gpu": gpus},
                                                                  "limits": {"nvidia.com/gpu": gpus}}}]},
        "status": {"phase": draw(st.sampled_from(["Running", "Pending", "Succeeded"]))},
    }
    _spoil_all(pod, [
        (("spec", "nodeName"), "str"), (("spec", "nodeSelector"), "obj"), (("spec", "tolerations"), "list"),
        (("spec", "tolerations", "key"), "str"), (("spec", "tolerations", "operator"), "str"),
        (("spec", "tolerations", "tolerationSeconds"), "int"), (("spec", "containers"), "list"),
        (("spec", "containers", "image"), "str"), (("spec", "containers", "resources"), "obj"),
        (("spec", "containers", "resources", "requests"), "obj"), (("status", "phase"), "str"),
    ], draw(spoils))
    return pod


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(node_list=st.lists(gpu_nodes(), max_size=3), pod_list=st.lists(gpu_pods(), max_size=3),
       per_replica=st.integers(1, 8))
def test_cluster_facts_never_raise_and_count_whole_free_slots(
        node_list: list[dict[str, Any]], pod_list: list[dict[str, Any]], per_replica: int) -> None:
    used = gpu_usage_by_node(pod_list)
    assert all(isinstance(v, int) and v >= 0 for v in used.values())
    for template in [None, *pod_list]:
        facts = cluster_facts(template, node_list, used, per_replica)
        slots = facts.free_replica_slots
        assert slots is None or (isinstance(slots, int) and 0 <= slots <= 8 * len(node_list)), facts
        for node in node_list:
            reason = leaving_reason(node, (template or {}).get("spec") or {})
            assert reason is None or isinstance(reason, str)
