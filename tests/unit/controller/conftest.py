"""Fixtures: a fake API server over HTTP, the real `kubernetes` client pointed at it, object builders."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kubernetes import client

from autoscaler.controller.manager import Controller, ControllerConfig
from autoscaler.core.signals import Measured, Signals
from autoscaler.policy import ModelScalingPolicy
from tests.unit.controller.fakeapi import FakeKube

GROUP = "autoscaler.inference.dev"


class CountingSource:
    """A MetricsSource that returns fixed load and counts calls and the (simulated) queries they make:
    one batched query per signal per call, as the Prometheus source does."""

    QUERIES_PER_COLLECT = 8

    def __init__(self, prompt_tps: float = 3000.0, gen_tps: float = 5000.0, fresh: bool = True) -> None:
        self.prompt_tps, self.gen_tps, self.fresh = prompt_tps, gen_tps, fresh
        self.calls: list[list[str]] = []
        self.queries = 0
        self.fail = False

    def collect(self, policies: Sequence[ModelScalingPolicy], now: float) -> dict[str, Signals]:
        self.calls.append([p.key for p in policies])
        self.queries += self.QUERIES_PER_COLLECT
        if self.fail:
            raise RuntimeError("prometheus down")
        if not self.fresh:
            return {p.key: Signals() for p in policies}
        sig = Signals(
            request_rate=Measured(5.0, 1.0),
            prompt_tokens_rate=Measured(self.prompt_tps, 1.0),
            generation_tokens_rate=Measured(self.gen_tps, 1.0),
            running=Measured(20.0, 1.0),
            waiting=Measured(0.0, 1.0),
            kv_cache_usage=Measured(0.5, 1.0),
        )
        return {p.key: sig for p in policies}


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    fake = FakeKube()
    fake.url = fake.start()  # type: ignore[attr-defined]
    yield fake
    fake.stop()


@pytest.fixture
def api(kube: FakeKube) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = kube.url  # type: ignore[attr-defined]
    return client.ApiClient(cfg)


@pytest.fixture
def source() -> CountingSource:
    return CountingSource()


def ts(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


def policy(
    name: str = "llama",
    namespace: str = "models",
    *,
    kind: str = "Deployment",
    api_version: str = "apps/v1",
    target: str = "llama",
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "targetRef": {"apiVersion": api_version, "kind": kind, "name": target},
        "model": {"name": name},
        "replicas": {"min": 1, "max": 20},
        "forecast": {"enabled": False},
        "intervalSeconds": 15,
    }
    body.update(spec)
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "ModelScalingPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


def add_policy(kube: FakeKube, **kw: Any) -> dict[str, Any]:
    return kube.put(GROUP, "modelscalingpolicies", policy(**kw), kind="ModelScalingPolicy")


def pod(
    name: str,
    namespace: str,
    labels: dict[str, str],
    *,
    ready: bool = True,
    node: str = "gpu-1",
    image: str = "vllm/vllm-openai:v0.6",
    gpus: int = 1,
    created_ago: float = 600,
) -> dict[str, Any]:
    conds = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(created_ago - 2)}]
    statuses = [{"name": "engine", "state": {"waiting": {"reason": "ContainerCreating"}}}]
    if ready:
        conds.append({"type": "Ready", "status": "True", "lastTransitionTime": ts(created_ago - 100)})
        statuses = [{"name": "engine", "state": {"running": {"startedAt": ts(created_ago - 40)}}}]
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "creationTimestamp": ts(created_ago),
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "engine", "image": image, "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}
            ],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.1",
            "conditions": conds,
            "containerStatuses": statuses,
        },
    }


def add_deployment(
    kube: FakeKube,
    name: str = "llama",
    namespace: str = "models",
    replicas: int = 1,
    ready: int | None = None,
) -> dict[str, Any]:
    labels = {"app": name}
    dep = kube.put(
        "apps",
        "deployments",
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}},
            "status": {"replicas": replicas},
        },
        kind="Deployment",
    )
    for i in range(replicas if ready is None else ready):
        kube.put("", "pods", pod(f"{name}-{i}", namespace, labels), kind="Pod")
    return dep


def add_gpu_node(kube: FakeKube, name: str = "gpu-1", gpus: int = 8) -> None:
    kube.put(
        "",
        "nodes",
        {
            "metadata": {"name": name, "labels": {"gpu": "true"}, "creationTimestamp": ts(86400)},
            "spec": {},
            "status": {
                "allocatable": {"nvidia.com/gpu": str(gpus)},
                "conditions": [{"type": "Ready", "status": "True"}],
                "images": [{"names": ["vllm/vllm-openai:v0.6"], "sizeBytes": 1}],
            },
        },
        kind="Node",
    )


def make_controller(api: client.ApiClient, source: Any, clock: Any = None, **cfg: Any) -> Controller:
    return Controller(
        api, source, ControllerConfig(identity=cfg.pop("identity", "test"), **cfg), clock=clock or time.time
    )


def status_of(kube: FakeKube, name: str = "llama", namespace: str = "models") -> dict[str, Any]:
    obj = kube.get(GROUP, "modelscalingpolicies", namespace, name)
    assert obj is not None
    return obj.get("status") or {}


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions", []) if c["type"] == kind)
