"""The objects of the drill: a GPU model Deployment on KWOK nodes, its ModelScalingPolicy, KServe."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from ..cluster import GPU_RESOURCE, KWOK_TOLERATION, READY_DELAY_ANNOTATION, RUNNING_DELAY_ANNOTATION

POLICY_GROUP, POLICY_VERSION, POLICY_PLURAL = "autoscaler.inference.dev", "v1alpha1", "modelscalingpolicies"
KSERVE_GROUP, KSERVE_VERSION = "serving.kserve.io", "v1beta1"
KSERVE_CRD = Path(__file__).with_name("kserve-inferenceservice-crd.yaml")
POOL_LABEL = "drill.inference-autoscaler/pool"  # keeps each test's pods on its own fake nodes


def model_deployment(name: str, replicas: int, *, pool: str, ready_delay: float, running_delay: float = 1.0,
                     gpus: int = 1) -> dict[str, Any]:
    """Pods that request `gpus` nvidia.com/gpu, tolerate the KWOK taint, land on `pool` nodes, and turn
    Ready `running_delay + ready_delay` seconds after binding (the model's cold start)."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": {
                    READY_DELAY_ANNOTATION: f"{ready_delay:g}s",
                    RUNNING_DELAY_ANNOTATION: f"{running_delay:g}s",
                }},
                "spec": {
                    "nodeSelector": {"type": "kwok", POOL_LABEL: pool},
                    "tolerations": [KWOK_TOLERATION],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "vllm",
                        "image": "vllm/vllm-openai:v0.8.5",
                        "resources": {"requests": {GPU_RESOURCE: str(gpus), "cpu": "1"},
                                      "limits": {GPU_RESOURCE: str(gpus)}},
                    }],
                },
            },
        },
    }


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def policy(name: str, target: dict[str, str], model: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ModelScalingPolicy with short intervals (drill time scale); `spec` is merged over the defaults."""
    base: dict[str, Any] = {
        "targetRef": target,
        "model": {"name": model, "engine": "vllm", "gpusPerReplica": 1},
        # KWOK pods have no endpoints: scraping them directly could only time out.
        "metrics": {"source": "prometheus", "fallbackToScrape": False, "stalenessSeconds": 6},
        "intervalSeconds": 2,
        "forecast": {"enabled": False},
    }
    return {
        "apiVersion": f"{POLICY_GROUP}/{POLICY_VERSION}",
        "kind": "ModelScalingPolicy",
        "metadata": {"name": name},
        "spec": deep_merge(base, spec or {}),
    }


def deployment_ref(name: str) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}


def kserve_crd() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(KSERVE_CRD.read_text())
    return doc


def inference_service(name: str, autoscaler_class: str, min_replicas: int = 1,
                      max_replicas: int | None = None) -> dict[str, Any]:
    predictor: dict[str, Any] = {"minReplicas": min_replicas, "model": {
        "modelFormat": {"name": "huggingface"}, "runtime": "kserve-huggingfaceserver",
        "storageUri": "hf://meta-llama/Llama-3.1-8B-Instruct"}}
    if max_replicas is not None:
        predictor["maxReplicas"] = max_replicas
    return {
        "apiVersion": f"{KSERVE_GROUP}/{KSERVE_VERSION}",
        "kind": "InferenceService",
        "metadata": {"name": name, "annotations": {
            "serving.kserve.io/deploymentMode": "RawDeployment",
            "serving.kserve.io/autoscalerClass": autoscaler_class,
        }},
        "spec": {"predictor": predictor},
    }
