"""The demand in front of the engines (spec.scaleFromZero.query): one query per such policy, summed; an
unanswered gateway is unknown (its last value ageing), never a zero; a policy no Prometheus serves is told."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.controller.metric_source import RoutedSource, build_source
from autoscaler.core.signals import MISSING
from autoscaler.policy import ModelScalingPolicy, revised
from autoscaler.sources.front_door import FrontDoorSource
from autoscaler.sources.prom_api import PrometheusAPI
from autoscaler.sources.prometheus import PrometheusMetricsSource

from .helpers import error_count, fresh_telemetry, json_response, msp, prom_transport, vector

T0 = 1_700_000_000.0
QUERY = 'sum(gateway_pending{model="m"})'


def zero_msp(name: str = "m", query: str = QUERY, **kw: Any) -> ModelScalingPolicy:
    p = msp(name, **kw)
    return revised(p, spec=revised(p.spec, replicas={"min": 0}, scale_from_zero={"query": query}))


def source(answer: Any, *, default_url: bool = True, allowed: tuple[str, ...] = ()) -> tuple[FrontDoorSource, Any]:
    tel, reg = fresh_telemetry()
    transport = prom_transport(answer)
    prom = PrometheusMetricsSource("http://prom:9090", telemetry=tel, max_parallel_queries=2,
                                   allowed_urls=allowed,
                                   api_factory=lambda u: PrometheusAPI(u, client=httpx.Client(transport=transport)))
    return FrontDoorSource(prom, has_default_url=default_url), reg


def test_the_samples_are_summed_and_aged_from_their_time() -> None:
    asked: list[str] = []

    def answer(q: str) -> httpx.Response:
        asked.append(q)
        return json_response(vector([({"pod": "gw-a"}, T0 - 4, "2"), ({"pod": "gw-b"}, T0 - 4, "3")]))

    src, _ = source(answer)
    got = src.collect([zero_msp(), msp("plain")], T0)
    assert asked == [QUERY]  # the policy's query as written; a policy without the block asks nothing
    assert set(got) == {"default/m"} and got["default/m"].value == 5.0
    assert got["default/m"].age_seconds == pytest.approx(4.0)


@pytest.mark.parametrize(("body", "kind"), [
    (vector([]), "absent"),
    (vector([({}, T0, "NaN")]), "non_finite"),
    (vector([({}, T0, "-1")]), "negative"),
    ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "http_status"),
])
def test_a_bad_answer_is_unknown_and_the_last_good_value_ages(body: dict[str, Any], kind: str) -> None:
    state = {"good": True}

    def answer(q: str) -> httpx.Response:
        if state["good"]:
            return json_response(vector([({}, T0, "7")]))
        return json_response(body, 200 if body["status"] == "success" else 400)

    src, reg = source(answer)
    assert src.collect([zero_msp()], T0)["default/m"].value == 7.0
    state["good"] = False
    later = src.collect([zero_msp()], T0 + 30)["default/m"]
    assert later.value == 7.0 and later.age_seconds == pytest.approx(30.0)  # never a zero
    assert later.fresh(20.0) is None  # and soon too old to trust
    assert error_count(reg, "prometheus", kind) >= 1


def test_a_dead_prometheus_never_reads_as_no_demand() -> None:
    def answer(q: str) -> httpx.Response:
        raise httpx.ConnectError("refused")

    src, reg = source(answer)
    assert src.collect([zero_msp()], T0)["default/m"] is MISSING
    assert error_count(reg, "prometheus", "connect") == 1


def test_an_edited_query_does_not_inherit_the_old_answer() -> None:
    state = {"up": True}

    def answer(q: str) -> httpx.Response:
        if not state["up"]:
            raise httpx.ConnectError("refused")
        return json_response(vector([({}, T0, "4")]))

    src, _ = source(answer)
    src.collect([zero_msp()], T0)
    state["up"] = False
    assert src.collect([zero_msp(query="sum(other)")], T0 + 1)["default/m"] is MISSING


def test_without_any_prometheus_the_policy_is_told_what_to_set() -> None:
    src, reg = source(lambda q: json_response(vector([])), default_url=False)
    assert src.collect([zero_msp()], T0)["default/m"] is MISSING
    why = src.policy_errors["default/m"]
    assert "--prometheus-url" in why and "spec.metrics.prometheus.url" in why
    assert error_count(reg, "prometheus", "no_prometheus") == 1


def test_a_policy_url_off_the_allow_list_is_refused_and_not_asked() -> None:
    asked: list[str] = []
    def answer(q: str) -> httpx.Response:
        asked.append(q)
        return json_response(vector([({}, T0, "1")]))

    src, _ = source(answer)
    got = src.collect([zero_msp(url="http://elsewhere:9090")], T0)
    assert got["default/m"] is MISSING and asked == []
    assert "allow-list" in src.policy_errors["default/m"]


def test_one_policys_failure_stays_with_it() -> None:
    def answer(q: str) -> httpx.Response:
        if "broken" in q:
            return json_response({"status": "error", "errorType": "bad_data", "error": "x"}, 400)
        return json_response(vector([({}, T0, "3")]))

    src, _ = source(answer)
    got = src.collect([zero_msp("a", query="broken"), zero_msp("b")], T0)
    assert got["default/a"] is MISSING and got["default/b"].value == 3.0


def test_the_controllers_source_puts_the_gateway_beside_the_engine_signals() -> None:
    routed = build_source("http://prom:9090", lambda key: [])
    assert isinstance(routed, RoutedSource)
    transport = prom_transport(lambda q: json_response(vector([({}, T0, "6")] if q == QUERY else [])))
    routed.failover.prometheus._api_factory = (  # the same source the controller builds, a fake Prometheus
        lambda u: PrometheusAPI(u, client=httpx.Client(transport=transport)))
    got = routed.collect([zero_msp(), msp("plain")], T0)
    assert got["default/m"].front_door.value == 6.0 and got["default/plain"].front_door is MISSING


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(["NaN", "1e999", "x"]),
                       max_size=5))
def test_fuzz_any_answer_is_a_sum_of_good_samples_or_unknown(values: list[Any]) -> None:
    body = vector([({"i": str(i)}, T0, str(v)) for i, v in enumerate(values)])
    src, _ = source(lambda q: json_response(body))
    got = src.collect([zero_msp()], T0)["default/m"]
    parsed = []
    for v in values:
        try:
            parsed.append(float(v))
        except ValueError:
            parsed.append(math.nan)
    if values and all(math.isfinite(x) and x >= 0 for x in parsed):
        assert got.value == pytest.approx(sum(parsed))
    else:
        assert got is MISSING
