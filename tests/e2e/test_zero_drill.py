"""The scale-from-zero drill: a model rests at 0 replicas through a gap in its traffic and wakes for the first
request after it, on a real control plane with a real Prometheus.

A Deployment on a KWOK GPU node serves a short burst of requests; the emulator's gateway (in front of its
replicas, holding requests while none is Ready) is scraped by Prometheus beside the engines; the policy
(`replicas.min: 0`, `scaleFromZero` reading the gateway's count) takes the Deployment to 0 after
`idleSeconds` without a request, and back to 1 when requests reach the gateway again. The requests that
arrived while it rested wait out the cold start and are then served.

Needs .ci/build-kube.sh, .ci/install-helm.sh and .ci/install-prometheus.sh; fails (never skips) without.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from autoscaler.emulator.exposition import GATEWAY_METRIC
from simulations.trace import Trace

from .drill.history import wait_for
from .drill.manifests import deployment_ref, model_deployment, policy
from .drill.workspace import Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(360)]

APP, MODEL = "dev-model", "meta-llama/Llama-3.1-8B-Instruct"
READY_DELAY, RUNNING_DELAY = 6.0, 1.0
INTERVAL = 2.0
IDLE = 60.0  # scaleFromZero.idleSeconds (its lower bound)
RATE_WINDOW = "10s"  # the controller's --rate-window: the engines' rates empty 10 s after the last request
FIRST, GAP, SECOND = 20.0, 110.0, 40.0  # seconds of traffic, of nothing, of traffic again
RPS = 2.0


def gap_trace(seed: int = 3) -> Trace:
    rng = np.random.default_rng(seed)
    a = np.sort(rng.uniform(0.0, FIRST, int(RPS * FIRST)))
    b = np.sort(rng.uniform(FIRST + GAP, FIRST + GAP + SECOND, int(RPS * SECOND)))
    t = np.concatenate([a, b])
    return Trace("gap", t, rng.integers(200, 800, len(t)), rng.integers(20, 120, len(t)), 0.0)


def zero_policy() -> dict[str, Any]:
    return policy("dev", deployment_ref(APP), MODEL, {
        "intervalSeconds": INTERVAL,
        "metrics": {"stalenessSeconds": 3 * INTERVAL},
        "replicas": {"min": 0, "max": 3},
        "scaleFromZero": {"query": f'sum({GATEWAY_METRIC}{{model_name="{MODEL}"}})', "idleSeconds": IDLE},
        "coldStart": {"schedulingSeconds": 1.0, "nodeProvisioningSeconds": 5.0, "imagePullSeconds": RUNNING_DELAY,
                      "weightLoadSeconds": 0.0, "warmupSeconds": READY_DELAY, "spread": 0.2},
    })


def test_scale_from_zero_drill(workspace: Callable[[str], Workspace]) -> None:
    ws = workspace("zero")
    ws.add_gpu_nodes(1, gpus=4)
    ws.create_deployment(model_deployment(APP, 1, pool=ws.namespace, ready_delay=READY_DELAY,
                                          running_delay=RUNNING_DELAY))
    ws.wait_ready(APP, 1, timeout=READY_DELAY + 30)
    trace = gap_trace()
    emu = ws.emulator(trace, APP, MODEL)
    emu.start()
    prom = ws.prometheus(emu)
    prom.wait_for("vllm:num_requests_waiting", n=1)
    prom.wait_for(GATEWAY_METRIC, n=1)
    ws.create_policy(zero_policy())
    deploy_hist = ws.deployment_history(APP)
    status_hist = ws.policy_history("dev")
    ctl = ws.controller("zero", f"--rate-window={RATE_WINDOW}", prometheus_url=prom.url)
    t0 = emu.started_wall
    last_first = t0 + float(trace.arrival_s[trace.arrival_s < FIRST + 1].max())
    resumed = t0 + float(trace.arrival_s[trace.arrival_s > FIRST + 1].min())

    down = wait_for(lambda: next((c for c in deploy_hist.spec_changes() if c.replicas == 0), None),
                    FIRST + IDLE + 40, "the Deployment at 0 replicas")
    up = wait_for(lambda: next((c for c in deploy_hist.spec_changes() if c.at > down.at and c.replicas >= 1), None),
                  max(10.0, FIRST + GAP + 30 - (time.time() - t0)), "the Deployment woken")
    wait_for(lambda: emu.truth()["fleet"]["in_flight"] == 0 and time.time() > t0 + FIRST + GAP + SECOND,
             SECOND + 60, "every request served")
    reasons = status_hist.reasons()
    served = emu.truth()["fleet"]["request_success"]
    ctl.stop()
    changes = [(round(c.at - t0, 1), c.replicas) for c in deploy_hist.spec_changes()]
    print(f"\n==== scale from zero ====\nspec.replicas changes (s from the trace start): {changes}\n"
          f"last request before the gap {last_first - t0:.1f} s, first after {resumed - t0:.1f} s\n"
          f"to 0 {down.at - last_first:.1f} s after the last request; woken {up.at - resumed:.1f} s after the "
          f"first request after the gap; served {served:.0f} of {len(trace.arrival_s)}", file=sys.stderr)
    # Back to 0 only after idleSeconds without a request (the engines' 10-s window empties first), and soon
    # after: a few ticks and scrapes.
    assert IDLE <= down.at - last_first <= IDLE + 10 + 4 * INTERVAL + 6, changes
    assert down.at < resumed, changes  # it rested before the traffic came back
    # Woken by the gateway's count: one scrape (1 s), one tick, the write.
    assert 0 < up.at - resumed <= 1 + 2 * INTERVAL + 3, changes
    assert [r for r in changes if r[1] == 0] == [(round(down.at - t0, 1), 0)], changes  # rested once
    assert "ScaleDownToZero" in reasons and "ScaleUpFromZero" in reasons, reasons
    assert served == len(trace.arrival_s)  # the held requests were served after the cold start
