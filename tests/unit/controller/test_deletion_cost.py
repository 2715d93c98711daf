"""Before lowering replicas the controller marks the target's pods with a deletion cost (fewest in-flight
requests: lowest cost), against the fake API server; failures never block the scale-down."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx
import pytest

from autoscaler.controller.deletion_cost import unsupported
from autoscaler.core.signals import Signals
from autoscaler.core.victims import ANNOTATION
from autoscaler.policy import ModelScalingPolicy
from autoscaler.sources.scrape import ScrapeMetricsSource
from autoscaler.targets.scale import CustomScale
from tests.unit.controller.conftest import (
    CountingSource,
    add_deployment,
    add_gpu_node,
    add_policy,
    make_controller,
    pod,
    status_of,
)
from tests.unit.controller.fakeapi import FakeKube
from tests.unit.controller.test_kserve_and_lws_targets import add_lws

# in flight (running, waiting) per pod index; pod i has IP 10.0.0.(i+1)
LOADS = {0: (7, 2), 1: (0, 0), 2: (3, 0), 3: (12, 4)}
SCALE_DOWN = {"stabilizationWindowSeconds": 1, "maxStepReplicas": 2, "maxStepPercent": 50}


class PerPodSource(CountingSource):
    """Low total load (the policy scales down) and a real scrape source serving each pod's gauges."""

    def __init__(self, loads: dict[int, tuple[int, int]], fresh: bool = True) -> None:
        super().__init__(prompt_tps=10.0, gen_tps=10.0, fresh=fresh)
        self.loads = loads

        def handler(request: httpx.Request) -> httpx.Response:
            i = int(request.url.host.rsplit(".", 1)[1]) - 1
            if i not in self.loads:
                return httpx.Response(503)
            r, w = self.loads[i]
            body = (f'vllm:num_requests_running{{model_name="llama"}} {r}\n'
                    f'vllm:num_requests_waiting{{model_name="llama"}} {w}\n')
            return httpx.Response(200, text=body)

        self.scrape = ScrapeMetricsSource(
            lambda p: [f"10.0.0.{i + 1}" for i in range(4)], transport=httpx.MockTransport(handler)
        )

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        self.scrape.collect(policies, now)
        return super().collect(policies, now)


def _deployment(kube: FakeKube, n: int = 4) -> None:
    add_gpu_node(kube)
    add_deployment(kube, replicas=n, ready=0)
    for i in range(n):
        p = pod(f"llama-{i}", "models", {"app": "llama"}, created_ago=600 + i)
        p["status"]["podIP"] = f"10.0.0.{i + 1}"
        kube.put("", "pods", p, kind="Pod")


def _costs(kube: FakeKube, ns: str = "models") -> dict[str, str | None]:
    return {
        p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get(ANNOTATION)
        for p in kube.items("", "pods")
        if p["metadata"]["namespace"] == ns
    }


def _scale_down(api: Any, source: Any) -> Any:
    """Two ticks 20 s apart: the first starts the (1 s) stabilization window, the second scales down."""
    t = [time.time()]
    c = make_controller(api, source, clock=lambda: t[0])
    c.run_once()
    t[0] += 20
    return c.run_once()


def _replicas(kube: FakeKube) -> int:
    dep = kube.get("apps", "deployments", "models", "llama")
    assert dep is not None
    return int(dep["spec"]["replicas"])


def test_before_a_scale_down_the_least_busy_pods_get_the_lowest_cost(kube, api):
    _deployment(kube)
    add_policy(kube, scaleDown=SCALE_DOWN)
    _scale_down(api, PerPodSource(LOADS))
    assert _replicas(kube) == 2, "the scale-down was written"
    assert _costs(kube) == {"llama-0": "9", "llama-1": "0", "llama-2": "3", "llama-3": "16"}
    st = status_of(kube)["deletionCost"]
    assert st["state"] == "Set" and st["victims"] == ["llama-1", "llama-2"]
    patches = kube.calls("PATCH", r"/api/v1/namespaces/models/pods/")
    assert len(patches) == 4
    # the patches came before the write that lowers replicas
    log = kube.calls()
    first_write = next(i for i, c in enumerate(log) if c[0] == "PUT" and c[1].endswith("/scale"))
    assert max(i for i, c in enumerate(log) if c[0] == "PATCH" and "/pods/" in c[1]) < first_write


def test_an_unknown_pod_is_treated_as_busy(kube, api):
    _deployment(kube)
    add_policy(kube, scaleDown=SCALE_DOWN)
    loads = dict(LOADS)
    del loads[1]  # the idle pod does not answer its scrape: unknown, never the first victim
    _scale_down(api, PerPodSource(loads))
    costs = _costs(kube)
    assert costs["llama-1"] == str(2**31 - 1)
    assert status_of(kube)["deletionCost"]["victims"] == ["llama-2", "llama-0"]


def test_patch_failures_never_block_the_scale_down(kube, api):
    _deployment(kube)
    add_policy(kube, scaleDown=SCALE_DOWN)
    kube.fail("PATCH", r"/pods/llama-", 500, times=10)
    report = _scale_down(api, PerPodSource(LOADS))
    assert _replicas(kube) == 2 and report.errors == 0
    st = status_of(kube)
    assert st["deletionCost"]["state"] == "Partial" and "4 patches failed" in st["deletionCost"]["message"]
    assert st["lastDecision"]["applied"] is True


def test_no_cost_when_disabled_by_the_policy(kube, api):
    _deployment(kube)
    add_policy(kube, scaleDown={**SCALE_DOWN, "deletionCost": False})
    _scale_down(api, PerPodSource(LOADS))
    assert _replicas(kube) == 2
    assert set(_costs(kube).values()) == {None}
    assert status_of(kube)["deletionCost"]["state"] == "Disabled"


def test_only_pods_of_the_target_are_patched(kube, api):
    _deployment(kube)
    other = pod("other-0", "models", {"app": "other"})
    elsewhere = pod("llama-x", "elsewhere", {"app": "llama"})
    kube.put("", "pods", other, kind="Pod")
    kube.put("", "pods", elsewhere, kind="Pod")
    add_policy(kube, scaleDown=SCALE_DOWN)
    _scale_down(api, PerPodSource(LOADS))
    assert not kube.calls("PATCH", r"/pods/other-0") and not kube.calls("PATCH", r"/namespaces/elsewhere/")
    assert _costs(kube, "elsewhere") == {"llama-x": None}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("LeaderWorkerSet", "deletionCost: unsupported for LeaderWorkerSet"),
     ("StatefulSet", "deletionCost: unsupported for StatefulSet"), ("ReplicaSet", None)],
)
def test_targets_not_scaled_down_by_a_replicaset_say_so(kind: str, expected: str | None) -> None:
    target: Any = CustomScale(None, "models", "g", "v1", "x", "llama", kind, reads=object())  # type: ignore[arg-type]
    got = unsupported(target)
    assert (got is None) if expected is None else (got is not None and got.startswith(expected))


def test_a_leaderworkerset_policy_says_so_in_its_status_and_patches_no_pod(kube, api):
    add_lws(kube, "llama-70b", replicas=1)
    add_policy(kube, name="llama-70b", kind="LeaderWorkerSet", api_version="leaderworkerset.x-k8s.io/v1",
               target="llama-70b")
    make_controller(api, CountingSource()).run_once()
    st = status_of(kube, "llama-70b")["deletionCost"]
    assert st["state"] == "Unsupported"
    assert st["message"].startswith("deletionCost: unsupported for LeaderWorkerSet")
    assert not kube.calls("PATCH", r"/pods/")


def test_no_cost_is_set_when_the_decisions_metrics_are_not_fresh(api):
    from autoscaler.controller.deletion_cost import DeletionCoster
    from autoscaler.policy_loader import parse_policy
    from autoscaler.targets.scale import DeploymentScale
    from tests.unit.controller.conftest import policy

    coster = DeletionCoster(api, PerPodSource(LOADS))
    pol = parse_policy(policy(scaleDown=SCALE_DOWN))
    target = DeploymentScale(None, "models", "llama", reads=object())  # type: ignore[arg-type]
    pods = [pod(f"llama-{i}", "models", {"app": "llama"}) for i in range(4)]
    out = coster.before_write(pol, target, pods, 4, 2, False, True, time.time())
    assert out is not None and out["state"] == "Skipped" and "not fresh" in out["message"]
    assert coster.before_write(pol, target, pods, 4, 5, True, True, time.time()) is None  # a scale-up


def test_with_warm_capacity_equal_load_ties_go_to_pods_whose_node_stays(kube, api):
    """spec.warmCapacity on: of two equally busy pods, the one sharing its node with another replica gets the
    lower cost (its node stays, and with it the cached image); the lone pod's node would empty."""
    for n in ("gpu-1", "gpu-2", "gpu-3"):
        add_gpu_node(kube, n)
    add_deployment(kube, replicas=4, ready=0)
    for i, node in enumerate(("gpu-1", "gpu-2", "gpu-2", "gpu-3")):
        p = pod(f"llama-{i}", "models", {"app": "llama"}, created_ago=600 + i, node=node)
        p["status"]["podIP"] = f"10.0.0.{i + 1}"
        kube.put("", "pods", p, kind="Pod")
    add_policy(kube, scaleDown=SCALE_DOWN, warmCapacity={"enabled": True, "maxSlots": 0})
    loads = {0: (2, 0), 1: (2, 0), 2: (9, 0), 3: (0, 0)}  # llama-0 alone on gpu-1, llama-1 shares gpu-2
    _scale_down(api, PerPodSource(loads))
    costs = {k: int(v) for k, v in _costs(kube).items() if v is not None}
    assert costs["llama-3"] < costs["llama-1"] < costs["llama-0"] < costs["llama-2"]
    assert status_of(kube)["deletionCost"]["victims"] == ["llama-3", "llama-1"]
