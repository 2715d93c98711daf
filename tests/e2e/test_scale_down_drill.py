"""Scale-down drill: the controller marks the least busy pods with the lowest pod-deletion-cost before it
lowers replicas, and the real ReplicaSet controller deletes exactly those.

Four KWOK pods of a Deployment (two created first, two later, so the ReplicaSet's default ranking would
delete the two newer ones: the most recently ready). The vLLM emulator serves one replica per pod, its
series labelled with the pod's name; six long generations arrive one by one and the emulator's router
spreads them 2/2/1/1, the two 1s on the two *oldest* pods. Then nothing more arrives: the controller, on
Prometheus's per-pod `sum by (pod)` of running + waiting, annotates the pods (cost = requests in flight) and
scales 4 -> 2. The pods the ReplicaSet deletes must be the two oldest (cost 1), not the two newest its
default ranking would pick (cost 2).

Needs .ci/build-kube.sh, .ci/install-helm.sh and .ci/install-prometheus.sh; fails (never skips) without.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from autoscaler.core.victims import ANNOTATION
from simulations.trace import Trace

from .drill.history import wait_for
from .drill.manifests import deployment_ref, model_deployment, policy
from .drill.podnames import PodWatcher, name_replicas
from .drill.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

APP, MODEL, NAME = "llama-8b", "meta-llama/Llama-3.1-8B-Instruct", "llama-8b"
READY_DELAY, RUNNING_DELAY = 2.0, 1.0
INTERVAL = 2.0
LONG = 6  # long generations: the router (join the shortest queue, first of equals) puts them 2/2/1/1


def long_generations() -> Trace:
    """LONG requests one second apart, each ~8,000 tokens of decoding: still running when the fleet shrinks."""
    n = LONG
    return Trace("long-generations", np.arange(1.0, n + 1.0), np.full(n, 200, dtype=np.int64),
                 np.full(n, 8000, dtype=np.int64), time.time())


def drill_policy() -> dict[str, Any]:
    return policy(NAME, deployment_ref(APP), MODEL, {
        "intervalSeconds": INTERVAL,
        "metrics": {"stalenessSeconds": 3 * INTERVAL},
        "replicas": {"min": 2, "max": 4},
        "capacity": {"maxConcurrency": 16},
        "scaleDown": {"stabilizationWindowSeconds": 6, "periodSeconds": 2, "maxStepReplicas": 2,
                      "maxStepPercent": 50, "deletionCost": True},
    })


def test_scale_down_removes_the_least_busy_pods(workspace: Callable[[str], Workspace]) -> None:
    t0 = time.monotonic()
    ws = workspace("scaledown")
    ws.add_gpu_nodes(1, gpus=4)
    ws.create_deployment(model_deployment(APP, 2, pool=ws.namespace, ready_delay=READY_DELAY,
                                          running_delay=RUNNING_DELAY))
    ws.wait_ready(APP, 2, timeout=30)
    time.sleep(2.0)  # the second pair is ready measurably later (the ReplicaSet ranks by ready time)
    ws.apps.patch_namespaced_deployment_scale(APP, ws.namespace, {"spec": {"replicas": 4}})
    ws.wait_ready(APP, 4, timeout=30)
    pods = sorted(ws.core.list_namespaced_pod(ws.namespace, label_selector=f"app={APP}").items,
                  key=lambda p: (p.metadata.creation_timestamp, p.metadata.name))
    oldest, newest = [p.metadata.name for p in pods[:2]], [p.metadata.name for p in pods[2:]]
    watcher = PodWatcher(ws.core, ws.namespace, f"app={APP}").start()
    ws.defer(watcher.stop)

    emu = ws.emulator(long_generations(), APP, MODEL)
    # replicas 0 and 1 get two requests each, 2 and 3 one each: put the light ones on the oldest pods
    name_replicas(emu, {0: newest[0], 1: newest[1], 2: oldest[0], 3: oldest[1]})
    emu.start()
    prom = ws.prometheus(emu)
    prom.wait_for("vllm:num_requests_running", n=4)
    wait_for(lambda: emu.truth()["fleet"]["running"] >= LONG, 20, "all long generations running")
    per_replica = {r.replica_id: r.running + r.waiting for r in emu.server.driver.snapshot.replicas}
    assert per_replica == {0: 2, 1: 2, 2: 1, 3: 1}, per_replica

    ws.create_policy(drill_policy())
    ctl = ws.controller("scaledown", prometheus_url=prom.url)
    wait_for(lambda: ws.replicas(APP) == 2, 60, "the scale-down to 2")
    wait_for(lambda: len(watcher.terminated()) >= 2, 20, "the ReplicaSet deleting two pods")
    time.sleep(1.0)
    watcher.poll()
    status = ws.policy_status(NAME)
    ctl.stop()
    wall = time.monotonic() - t0

    costs = {n: watcher.pods[n].annotations.get(ANNOTATION) for n in (*oldest, *newest)}
    deleted = watcher.terminated()
    print("\n==== scale-down drill ====\n"
          f"wall {wall:.1f}s; pods oldest {oldest}, newest {newest}; in flight per replica {per_replica}\n"
          f"deletion costs {costs}\ndeleted {deleted}\nstatus.deletionCost {status.get('deletionCost')}\n"
          f"last decision {status.get('lastDecision', {}).get('message')}", file=sys.stderr)

    # every pod was annotated with its requests in flight, before any was deleted
    assert costs == {oldest[0]: "1", oldest[1]: "1", newest[0]: "2", newest[1]: "2"}, costs
    # the ReplicaSet deleted the least busy pods (the oldest: its default ranking would have taken the newest)
    assert deleted == sorted(oldest), (deleted, costs)
    dc = status.get("deletionCost") or {}
    assert dc.get("state") == "Set" and sorted(dc.get("victims") or []) == sorted(oldest), dc
    assert ctl.returncode == 0, ctl.log_tail()
