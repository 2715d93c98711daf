"""The per-pod in-flight query (`sum by (pod)` of running + waiting) against a real Prometheus scraping the
emulator: one answer per replica, named by the `pod` label the emulator's service discovery sets, each within
the range that replica's running + waiting took over the last scrape interval (Prometheus scrapes each
replica at its own offset within the 1 s interval, so the value can be up to ~1 s old)."""

from __future__ import annotations

import time

import pytest

from autoscaler.emulator.server import EmulatorServer
from autoscaler.sources.per_pod import pod_inflight

from .conftest import MODEL, REPLICAS, PrometheusProcess
from .test_prometheus_source_live import policy, source, wait_until_warm

pytestmark = pytest.mark.integration


def test_per_pod_inflight_matches_each_replica(emulator: EmulatorServer, prometheus: PrometheusProcess) -> None:
    wait_until_warm(emulator, 8)
    src, p = source(prometheus.url), policy()
    names = [f"{MODEL.lower()}-{i}" for i in range(REPLICAS)]
    now = time.time()
    got = src.pod_inflight(p, now, max_age_seconds=30)
    assert sorted(got) == names
    snaps = [x for x in list(emulator.driver.recent) if now - 2.6 <= x.wall_time <= now + 0.3]
    assert snaps
    for i, name in enumerate(names):
        vals = [x.replicas[i].running + x.replicas[i].waiting for x in snaps]
        assert min(vals) - 1 <= got[name].value <= max(vals) + 1, (name, got[name], vals)
    # through the one small function the controller calls: a pod Prometheus does not know is unknown
    both = pod_inflight(src, p, {**dict.fromkeys(names, None), "not-a-replica": None}, now, 30)
    assert both["not-a-replica"] is None and all(both[n] is not None for n in names)
    # nothing fresher than the max age: every pod unknown, never zero
    assert src.pod_inflight(p, now, max_age_seconds=1e-9) == {}
