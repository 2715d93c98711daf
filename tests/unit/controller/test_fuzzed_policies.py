"""Accepted fuzzed policies go through a real reconcile tick (fake API server) without raising."""

from __future__ import annotations

import random
import time

import yaml

from autoscaler.crd import spec_schema
from autoscaler.policy_loader import PolicyError, load_policies_text
from benchmarks.fuzz_policy import BASE_FILE, _case, _fields
from tests.unit.controller.conftest import GROUP, add_deployment, add_gpu_node, condition, make_controller, status_of


def test_every_accepted_fuzzed_policy_is_reconciled_and_none_stops_the_tick(kube, api, source):
    rng = random.Random(3)
    base = yaml.safe_load(BASE_FILE.read_text())
    fields = _fields(spec_schema())
    add_gpu_node(kube)
    names: list[str] = []
    while len(names) < 25:
        text = _case(rng, base, fields)
        try:
            load_policies_text(text)
        except PolicyError:
            continue
        doc = yaml.safe_load(text)
        name = f"p{len(names)}"
        doc["metadata"] = {"name": name, "namespace": "models"}
        doc["spec"]["targetRef"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        doc["spec"]["dryRun"] = False
        add_deployment(kube, name, replicas=2)
        kube.put(GROUP, "modelscalingpolicies", doc, kind="ModelScalingPolicy")
        names.append(name)
    c = make_controller(api, source)
    t0 = time.monotonic()
    report = c.run_once()
    assert time.monotonic() - t0 < 20
    assert report.reconciled == len(names) and report.errors == 0 and report.invalid == 0
    for name in names:
        assert condition(status_of(kube, name), "TargetFound")["status"] == "True"
