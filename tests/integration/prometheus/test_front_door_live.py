"""The gateway's count (spec.scaleFromZero.query) through a real Prometheus scraping the emulator: a query
over the emulator's own series comes back summed and within what the replicas held; a query with no series
is unknown, never zero, until `or vector(0)` says none is none."""

from __future__ import annotations

import time

import pytest

from autoscaler.core.signals import MISSING
from autoscaler.emulator.server import EmulatorServer
from autoscaler.policy import ModelScalingPolicy, revised
from autoscaler.sources.front_door import FrontDoorSource

from .conftest import MODEL, PrometheusProcess
from .test_prometheus_source_live import policy, source, wait_until_warm

pytestmark = pytest.mark.integration

IN_FLIGHT = (f'sum(vllm:num_requests_running{{model_name="{MODEL}"}}) + '
             f'sum(vllm:num_requests_waiting{{model_name="{MODEL}"}})')


def with_query(query: str) -> ModelScalingPolicy:
    p = policy()
    return revised(p, spec=revised(p.spec, replicas={"min": 0}, scale_from_zero={"query": query}))


def test_the_query_is_summed_as_prometheus_answers_it(emulator: EmulatorServer, prometheus: PrometheusProcess) -> None:
    wait_until_warm(emulator, 8)
    src = FrontDoorSource(source(prometheus.url), has_default_url=True)
    now = time.time()
    got = src.collect([with_query(IN_FLIGHT)], now)["serving/llama"]
    snaps = [x for x in list(emulator.driver.recent) if now - 2.6 <= x.wall_time <= now + 0.3]
    assert snaps and got.value is not None
    held = [sum(r.running + r.waiting for r in x.replicas) for x in snaps]
    # each replica is scraped at its own offset within the 1-s interval: the sum lies within what they held
    assert min(held) - 3 <= got.value <= max(held) + 3, (got, held)
    assert got.fresh(5.0) is not None


def test_no_series_is_unknown_until_the_query_says_none_is_zero(prometheus: PrometheusProcess) -> None:
    src = FrontDoorSource(source(prometheus.url), has_default_url=True)
    now = time.time()
    assert src.collect([with_query("sum(gateway_pending_requests)")], now)["serving/llama"] is MISSING
    zero = src.collect([with_query("sum(gateway_pending_requests) or vector(0)")], now)["serving/llama"]
    assert zero.value == 0.0 and zero.fresh(5.0) == 0.0
    bad = src.collect([with_query("sum(rate(")], now)["serving/llama"]  # Prometheus refuses it: unknown
    assert bad is MISSING
