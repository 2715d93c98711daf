"""KWOK Stage objects used by :class:`LocalCluster`.

Default node stages (``node-initialize`` from KWOK's ``node/fast`` set plus
``node-heartbeat-with-lease``) and pod stages (KWOK's ``pod/general`` set) are
read from the KWOK module source that ``.ci/build-kube.sh`` copies to
``$KUBE_BIN_DIR/kwok-kustomize``. Their delays are rewritten to be
deterministic (no jitter), and the general ``pod-ready`` stage is replaced
by two stages that model an inference server's cold start:

``pod-running``
    containers start (phase ``Running``, ``ready: false``) ``running_delay``
    seconds after the pod was created on the node;
``pod-ready``
    the pod turns ``Ready`` ``ready_delay`` seconds later (model load).

Per pod the delays can be overridden with annotations, in Go duration syntax,
e.g. ``pod-ready.stage.kwok.x-k8s.io/delay: "45s"``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

READY_DELAY_ANNOTATION = "pod-ready.stage.kwok.x-k8s.io/delay"
RUNNING_DELAY_ANNOTATION = "pod-running.stage.kwok.x-k8s.io/delay"

_NODE_STAGE_FILES = (
    "stage/node/fast/node-initialize.yaml",
    "stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
)
_POD_STAGE_FILES = (
    "stage/pod/general/pod-create.yaml",
    "stage/pod/general/pod-init-container-running.yaml",
    "stage/pod/general/pod-init-container-completed.yaml",
    "stage/pod/general/pod-complete.yaml",
    "stage/pod/general/pod-delete.yaml",
)

_POD_RUNNING = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-running
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: 'Exists'
    - key: '.status.conditions.[] | select( .type == "Initialized" ) | .status'
      operator: 'In'
      values: ['True']
    - key: '.status.containerStatuses.[].state.running.startedAt'
      operator: 'DoesNotExist'
  weight: 1
  delay:
    durationMilliseconds: 1000
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-running.stage.kwok.x-k8s.io/delay"]'
  next:
    event:
      type: Normal
      reason: Started
      message: Started container (kwok), loading model
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }} {{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: 'containers with unready status: [{{ range .spec.containers }} {{ .name }} {{ end }}]'
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
"""

_POD_READY = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.containerStatuses.[].state.running.startedAt'
      operator: 'Exists'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values: ['False']
  weight: 1
  delay:
    durationMilliseconds: 10000
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'
  next:
    event:
      type: Normal
      reason: Ready
      message: Model loaded, container ready (kwok)
    statusTemplate: |
      {{ $now := Now }}
      {{ $root := . }}
      conditions:
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: ''
        reason: ''
        status: "True"
        type: Ready
      - lastProbeTime: null
        lastTransitionTime: {{ $now | Quote }}
        message: ''
        reason: ''
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range $index, $item := .spec.containers }}
      {{ $origin := index $root.status.containerStatuses $index }}
      - image: {{ $item.image | Quote }}
        name: {{ $item.name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ or $origin.state.running.startedAt $now | Quote }}
      {{ end }}
"""


def _load(path: Path) -> dict[str, Any]:
    with path.open() as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or doc.get("kind") != "Stage":
        raise ValueError(f"{path} is not a KWOK Stage")
    return doc


def _set_delay(stage: dict[str, Any], seconds: float | None) -> dict[str, Any]:
    """Set a fixed default delay (keeps the per-pod annotation override) and drop jitter."""
    stage = copy.deepcopy(stage)
    delay = stage["spec"].get("delay")
    if delay is None:
        return stage
    if seconds is not None:
        delay["durationMilliseconds"] = round(seconds * 1000)
    name = stage["metadata"]["name"]
    if name != "pod-delete":  # pod-delete's jitter is the deletionTimestamp: keep grace periods.
        delay.pop("jitterDurationMilliseconds", None)
        delay.pop("jitterDurationFrom", None)
    return stage


def kwok_crd_path(kustomize_dir: Path) -> Path:
    return kustomize_dir / "crd" / "bases" / "kwok.x-k8s.io_stages.yaml"


def build_stages(
    kustomize_dir: Path,
    *,
    ready_delay: float,
    running_delay: float = 1.0,
    create_delay: float = 0.0,
    delete_delay: float = 0.0,
) -> list[dict[str, Any]]:
    """All Stage objects for the cluster (node stages first)."""
    missing = [p for p in (*_NODE_STAGE_FILES, *_POD_STAGE_FILES) if not (kustomize_dir / p).is_file()]
    if missing:
        raise FileNotFoundError(
            f"KWOK stage files missing under {kustomize_dir}: {missing}; run .ci/build-kube.sh"
        )
    stages = [_load(kustomize_dir / p) for p in _NODE_STAGE_FILES]
    delays = {
        "pod-create": create_delay,
        "pod-init-container-running": create_delay,
        "pod-init-container-completed": create_delay,
        "pod-complete": 1.0,
        "pod-delete": delete_delay,
    }
    for p in _POD_STAGE_FILES:
        st = _load(kustomize_dir / p)
        stages.append(_set_delay(st, delays[st["metadata"]["name"]]))
    stages.append(_set_delay(yaml.safe_load(_POD_RUNNING), running_delay))
    stages.append(_set_delay(yaml.safe_load(_POD_READY), ready_delay))
    return stages
