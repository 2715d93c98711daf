"""Where each of a target's pods is in its cold start, and which stages it has completed (the stages, the
signals Kubernetes gives for each and published durations: docs/cold-start.md).

Stages, from the pod's own timestamps:
- scheduling / node_provisioning: creation -> `PodScheduled=True`. When the node the pod landed on is
  known, it is node provisioning exactly when that node was created after the pod: a pod that waited
  (`Unschedulable`, `FailedScheduling`) and then landed on a node older than itself waited for a GPU to
  free, for a preemption or for the scheduler's node cache, not for a new node, and counting its few
  seconds as node provisioning would teach a lead time far shorter than a node boot. A pod created
  after a node launched for an earlier pod registered but before that node was Ready, and that landed
  there, reports no node stage: its wait covers only the end of that node's boot, a sample that would
  bias node provisioning low and scheduling high. When the node is not known (no node list), the pod's
  own history decides: seen `Unschedulable` or a scale-up event (`TriggeredScaleUp`, `Nominated`,
  `FailedScheduling`).
- image_pull: the kubelet `Pulled` events of the main containers (sum; cached if all were present). A
  pull that failed and was retried (`Pulling` said more than once before the container ever ran) counts
  from the first `Pulling`: the `Pulled` message times only the last attempt, not the back-off.
- weight_load: the KServe `storage-initializer` init container (startedAt -> finishedAt). Without one,
  an annotation `autoscaler.inference.dev/weights-loaded-at` (RFC 3339, set by the serving image or a
  sidecar) splits container start -> Ready into weight_load + warmup.
- warmup: main container start (or weights loaded) -> `Ready=True`. With neither an init container nor
  the annotation, weight loading cannot be told apart from warmup, so container start -> Ready is all
  reported as warmup (the weight_load prior then stays a prior). An engine that crashed and restarted
  before it was ready (an OOM in CUDA-graph capture, an NCCL timeout) starts from the first attempt the
  observer saw running: the failed attempts and the CrashLoopBackOff are part of that replica's cold
  start. The pod's status keeps only the current attempt and the one before, and cannot tell a crash
  before the first Ready from one hours later, so this needs the observer to have seen the first attempt
  (after a controller restart, a pod already past it counts from its current attempt, as before).

A replica that took a warm slot (a placeholder of spec.warmCapacity was preempted for it; see observe/warm.py)
reports every stage under the situation "warm", and its node stage as scheduling: it waited for the
preemption (the scheduler reports it Unschedulable with a FailedScheduling event first), not for a new node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from autoscaler.core.signals import ReplicaCounts, Stage, StartingReplica
from autoscaler.observe.pull_events import container_of, first_pulling_events, parse_pulled, retried_pull_seconds
from autoscaler.observe.selector import LabelSelector
from autoscaler.observe.timefmt import event_time, parse_time

Pod = Mapping[str, Any]
WEIGHTS_LOADED_ANNOTATION = "autoscaler.inference.dev/weights-loaded-at"
SCALE_UP_EVENT_REASONS = frozenset({"TriggeredScaleUp", "Nominated", "FailedScheduling"})
INTERESTING_EVENT_REASONS = SCALE_UP_EVENT_REASONS | {"Pulled", "Pulling"}


def _condition(pod: Pod, kind: str) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return c
    return None


def _true_at(pod: Pod, kind: str) -> float | None:
    c = _condition(pod, kind)
    return parse_time(c.get("lastTransitionTime")) if c and c.get("status") == "True" else None


def is_ready(pod: Pod) -> bool:
    c = _condition(pod, "Ready")
    return bool(c and c.get("status") == "True")


def is_terminating(pod: Pod) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_finished(pod: Pod) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_unschedulable(pod: Pod) -> bool:
    c = _condition(pod, "PodScheduled")
    return bool(c and c.get("status") == "False" and c.get("reason") == "Unschedulable")


def _storage_initializer(pod: Pod) -> Mapping[str, Any] | None:
    for s in (pod.get("status") or {}).get("initContainerStatuses") or ():
        if "storage-initializer" in (s.get("name") or ""):
            return s
    return None


def main_started_at(pod: Pod) -> float | None:
    """When the last main container started running; None unless all are running."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    if not statuses:
        return None
    times = []
    for s in statuses:
        t = parse_time(((s.get("state") or {}).get("running") or {}).get("startedAt"))
        if t is None:
            return None
        times.append(t)
    return max(times)


def _weights_loaded_at(pod: Pod) -> float | None:
    return parse_time(((pod.get("metadata") or {}).get("annotations") or {}).get(WEIGHTS_LOADED_ANNOTATION))


def starting_stage(pod: Pod, now: float) -> StartingReplica:
    """The stage a not-yet-ready pod is in, how long it has existed and how long it has been in the stage."""
    created = parse_time((pod.get("metadata") or {}).get("creationTimestamp")) or now
    age = max(0.0, now - created)
    scheduled_at = _true_at(pod, "PodScheduled")
    if scheduled_at is None:
        unsched = is_unschedulable(pod)
        return StartingReplica("node_provisioning" if unsched else "scheduling", age, age, unsched)
    init = _storage_initializer(pod)
    stage: Stage
    if init is not None and (init.get("state") or {}).get("running"):
        since = parse_time(init["state"]["running"].get("startedAt")) or scheduled_at
        stage = "weight_load"
    else:
        started = main_started_at(pod)
        if started is None:
            finished = parse_time((((init or {}).get("state") or {}).get("terminated") or {}).get("finishedAt"))
            since, stage = max(scheduled_at, finished or scheduled_at), "image_pull"
        else:
            loaded = _weights_loaded_at(pod)
            since, stage = (loaded, "warmup") if loaded is not None else (started, "warmup")
    return StartingReplica(stage, age, max(0.0, now - since), False)


def replica_counts(desired: int, pods: Iterable[Pod], now: float) -> ReplicaCounts:
    ready = terminating = 0
    starting: list[StartingReplica] = []
    for pod in pods:
        if is_finished(pod):
            continue
        if is_terminating(pod):
            terminating += 1
        elif is_ready(pod):
            ready += 1
        else:
            starting.append(starting_stage(pod, now))
    return ReplicaCounts(desired=desired, ready=ready, starting=tuple(starting), terminating=terminating)


@dataclass(frozen=True, slots=True)
class CompletedStage:
    stage: Stage
    seconds: float
    situation: str
    completed_at: float


WARM_SITUATION = "warm"


def completed_stages(
    pod: Pod, events: Iterable[Mapping[str, Any]], node_created_at: float | None, seen_unschedulable: bool,
    warm: bool = False, node_ready_at: float | None = None, first_started_at: float | None = None,
) -> list[CompletedStage]:
    """Every cold-start stage this pod has finished, with its duration and when it finished. `warm`: the pod
    took a warm slot (every stage is reported under the situation "warm", its node stage as scheduling).
    `node_created_at` / `node_ready_at`: when the pod's node was created and last became Ready (None:
    unknown). `first_started_at`: when its main containers were first seen running, if earlier than their
    current start (an engine that crashed and restarted before it was ready: the failed attempts and the
    back-off belong to its start, which counts from the first attempt)."""
    out = _completed_stages(pod, events, node_created_at, node_ready_at, seen_unschedulable, warm, first_started_at)
    if not warm:
        return out
    return [CompletedStage(c.stage, c.seconds, WARM_SITUATION, c.completed_at) for c in out]


TIMESTAMP_RESOLUTION_SECONDS = 1.0  # Kubernetes timestamps are whole seconds


def node_stage(created: float, scheduled_at: float, events: list[Mapping[str, Any]], node_created_at: float | None,
               node_ready_at: float | None, seen_unschedulable: bool, warm: bool) -> Stage | None:
    """Which node stage a pod created at `created` and scheduled at `scheduled_at` waited in; None when its
    wait is no sample of either: it landed on a node that existed but became Ready only while the pod
    waited (a Ready transition after the pod was scheduled is a later flap of the node, not its boot)."""
    if warm:
        return "scheduling"
    if node_created_at is None:  # no node list: the pod's own history decides
        waited = seen_unschedulable or any(e.get("reason") in SCALE_UP_EVENT_REASONS for e in events)
        return "node_provisioning" if waited else "scheduling"
    if node_created_at > created:
        return "node_provisioning"
    if node_ready_at is not None and created < node_ready_at <= scheduled_at + TIMESTAMP_RESOLUTION_SECONDS:
        return None
    return "scheduling"


def _completed_stages(
    pod: Pod, events: Iterable[Mapping[str, Any]], node_created_at: float | None, node_ready_at: float | None,
    seen_unschedulable: bool, warm: bool, first_started_at: float | None,
) -> list[CompletedStage]:
    """The cold-start stages this pod has finished, in order: node (scheduling, with a new node's provisioning),
    image pull, weight load and warmup."""
    out: list[CompletedStage] = []
    created = parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
    scheduled_at = _true_at(pod, "PodScheduled")
    events = list(events)
    if created is not None and scheduled_at is not None:
        stage = node_stage(created, scheduled_at, events, node_created_at, node_ready_at, seen_unschedulable, warm)
        if stage is not None:
            out.append(CompletedStage(stage, max(0.0, scheduled_at - created), "default", scheduled_at))
    pull = _image_pull(pod, events)
    if pull is not None:
        out.append(pull)
    out.extend(_load_and_warmup(pod, scheduled_at, first_started_at))
    return out


def _image_pull(pod: Pod, events: list[Mapping[str, Any]]) -> CompletedStage | None:
    """Image pull, once every main container has its Pulled event: the sum of their pulls, cached only if all
    were. A pull that failed and was retried counts from the first attempt (pull_events.retried_pull_seconds)."""
    containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or ()]
    pulls: dict[str, tuple[float, bool, float]] = {}
    first_pulling = first_pulling_events(events)
    restarted = _restarted_containers(pod)
    for e in events:
        if e.get("reason") != "Pulled":
            continue
        name = container_of(e)
        if name is None:
            continue
        pull = parse_pulled(e.get("message") or e.get("note") or "")
        at = event_time(e)
        if pull is not None and at is not None:
            seconds = pull.seconds
            if not pull.cached and name not in restarted and name in first_pulling:
                seconds = retried_pull_seconds(seconds, at, *first_pulling[name])
            pulls[name] = (seconds, pull.cached, at)
    if not containers or not all(c in pulls for c in containers):
        return None
    cached = all(p[1] for p in pulls.values())
    return CompletedStage("image_pull", sum(p[0] for p in pulls.values()), "cached" if cached else "uncached",
                          max(p[2] for p in pulls.values()))


def _load_and_warmup(pod: Pod, scheduled_at: float | None, first_started_at: float | None) -> list[CompletedStage]:
    """Weight load (the storage-initializer init container's run, as KServe's, or from the main containers'
    start to the pod's weights-loaded annotation) and warmup (from there, or from the start, to Ready)."""
    out: list[CompletedStage] = []
    started = main_started_at(pod)
    if started is not None and first_started_at is not None and scheduled_at is not None:
        started = min(started, max(first_started_at, scheduled_at))
    init = _storage_initializer(pod)
    warm_from = started
    term = ((init or {}).get("state") or {}).get("terminated") or {}
    if init is not None and term.get("exitCode") == 0:
        t0, t1 = parse_time(term.get("startedAt")), parse_time(term.get("finishedAt"))
        if t0 is not None and t1 is not None and t1 >= t0:
            out.append(CompletedStage("weight_load", t1 - t0, "default", t1))
    elif started is not None:
        loaded = _weights_loaded_at(pod)
        if loaded is not None and loaded >= started:
            out.append(CompletedStage("weight_load", loaded - started, "default", loaded))
            warm_from = loaded
    ready_at = _true_at(pod, "Ready")
    if ready_at is not None and warm_from is not None and ready_at >= warm_from:
        out.append(CompletedStage("warmup", ready_at - warm_from, "default", ready_at))
    return out


def _restarted_containers(pod: Pod) -> set[str]:
    return {s.get("name") for s in (pod.get("status") or {}).get("containerStatuses") or ()
            if (s.get("restartCount") or 0) > 0}


class PodIndex:
    """Pods by namespace, for selecting a target's pods without one API call per policy."""

    def __init__(self, pods: Iterable[Pod]):
        self.by_namespace: dict[str, list[Pod]] = {}
        for p in pods:
            ns = (p.get("metadata") or {}).get("namespace", "")
            self.by_namespace.setdefault(ns, []).append(p)

    def select(self, namespace: str, selector: str | None) -> list[Pod]:
        if not selector:
            return []  # no selector: we cannot tell which pods are the target's
        sel = LabelSelector(selector)
        return [
            p
            for p in self.by_namespace.get(namespace, ())
            if sel.matches((p.get("metadata") or {}).get("labels"))
        ]
