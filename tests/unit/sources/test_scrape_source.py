"""The direct-scrape source: rates from consecutive scrapes, resets, quantiles, and hostile pods."""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from prometheus_client import CollectorRegistry

from autoscaler.core.signals import MISSING
from autoscaler.sources.scrape import ScrapeMetricsSource, pod_url

from .helpers import error_count, fresh_telemetry, msp, vllm_text

T0 = 1_700_000_000.0
Pages = dict[str, Callable[[], httpx.Response]]


def make(pages: Pages, targets: dict[str, list[str]], **kw: object) -> tuple[ScrapeMetricsSource, CollectorRegistry]:
    tel, reg = fresh_telemetry()

    async def handler(request: httpx.Request) -> httpx.Response:
        page = pages.get(str(request.url))
        if page is None:
            raise httpx.ConnectError("no route to pod")
        return page()

    src = ScrapeMetricsSource(targets, telemetry=tel, transport=httpx.MockTransport(handler), **kw)  # type: ignore[arg-type]
    return src, reg


def text(body: str) -> Callable[[], httpx.Response]:
    return lambda: httpx.Response(200, text=body)


def test_addresses_are_completed_with_the_policy_scrape_port_and_path() -> None:
    p = msp("m")
    assert pod_url(p, "10.0.0.1") == "http://10.0.0.1:8000/metrics"
    assert pod_url(p, "10.0.0.1:9000") == "http://10.0.0.1:9000/metrics"
    assert pod_url(p, "[fd00::1]") == "http://[fd00::1]:8000/metrics"
    assert pod_url(p, "http://x/replica/1/metrics") == "http://x/replica/1/metrics"


def test_gauges_sum_over_pods_and_dp_engines_kv_is_a_mean() -> None:
    pages: Pages = {"http://a:8000/metrics": text(vllm_text(waiting=4, running=6, kv=0.2, engines=2)),
                    "http://b:8000/metrics": text(vllm_text(waiting=1, running=2, kv=0.6))}
    src, _ = make(pages, {"default/m": ["a", "b"]})
    s = src.collect([msp("m")], T0)["default/m"]
    assert s.waiting.value == 5 and s.running.value == 8
    assert s.kv_cache_usage.value == pytest.approx(0.4)
    assert s.waiting.age_seconds == 0


def test_first_scrape_has_no_rate_but_not_a_zero_either() -> None:
    src, _ = make({"http://a:8000/metrics": text(vllm_text(prompt=100))}, {"default/m": ["a"]})
    s = src.collect([msp("m")], T0)["default/m"]
    assert s.prompt_tokens_rate is MISSING and s.request_rate is MISSING


def test_rates_come_from_consecutive_scrapes_summed_over_pods() -> None:
    state = {"a": 1000.0, "b": 0.0}
    pages: Pages = {"http://a:8000/metrics": lambda: httpx.Response(200, text=vllm_text(prompt=state["a"])),
                    "http://b:8000/metrics": lambda: httpx.Response(200, text=vllm_text(prompt=state["b"],
                                                                                         engines=2))}
    src, _ = make(pages, {"default/m": ["a", "b"]})
    src.collect([msp("m")], T0)
    state["a"] += 150
    state["b"] += 300
    s = src.collect([msp("m")], T0 + 15)["default/m"]
    assert s.prompt_tokens_rate.value == pytest.approx((150 + 300) / 15)


def test_a_counter_that_drops_was_reset_and_its_new_value_is_the_increase() -> None:
    state = {"v": 5000.0}
    src, _ = make({"http://a:8000/metrics": lambda: httpx.Response(200, text=vllm_text(generation=state["v"]))},
                  {"default/m": ["a"]})
    src.collect([msp("m")], T0)
    state["v"] = 60.0  # the pod restarted
    s = src.collect([msp("m")], T0 + 10)["default/m"]
    assert s.generation_tokens_rate.value == pytest.approx(6.0)


def test_queue_p90_comes_from_bucket_increases_not_lifetime_totals() -> None:
    state = {"b": {"0.3": 1000.0, "1.0": 1000.0, "2.0": 1000.0, "+Inf": 1000.0}}
    src, _ = make({"http://a:8000/metrics": lambda: httpx.Response(200, text=vllm_text(queue_buckets=state["b"]))},
                  {"default/m": ["a"]})
    src.collect([msp("m")], T0)
    # In the window: 5 fast, 5 between 1 and 2 s. The lifetime totals would say p90 < 0.3.
    state["b"] = {"0.3": 1005.0, "1.0": 1005.0, "2.0": 1010.0, "+Inf": 1010.0}
    s = src.collect([msp("m")], T0 + 15)["default/m"]
    assert s.queue_time_p90_seconds.value == pytest.approx(1.8)


def test_histogram_is_the_bucket_increases_over_the_window_summed_over_pods() -> None:
    state = {"a": {"0.3": 100.0, "1.0": 100.0, "+Inf": 100.0}, "b": {"0.3": 7.0, "1.0": 8.0, "+Inf": 9.0}}
    pages: Pages = {f"http://{pod}:8000/metrics": (lambda pod=pod: httpx.Response(  # type: ignore[misc]
        200, text=vllm_text(queue_buckets=state[pod]))) for pod in ("a", "b")}
    src, _ = make(pages, {"default/m": ["a", "b"]})
    assert src.collect([msp("m")], T0)["default/m"].queue_time_histogram is None  # one scrape: no window yet
    state["a"] = {"0.3": 104.0, "1.0": 106.0, "+Inf": 106.0}
    state["b"] = {"0.3": 8.0, "1.0": 10.0, "+Inf": 12.0}
    h = src.collect([msp("m")], T0 + 15)["default/m"].queue_time_histogram
    assert h is not None
    assert h.upper_bounds == (0.3, 1.0, math.inf) and h.cumulative_counts == (5.0, 8.0, 9.0)
    assert h.age_seconds == 0


def test_a_histogram_that_drops_was_reset_and_its_new_counts_are_the_increase() -> None:
    state = {"b": {"0.3": 500.0, "1.0": 900.0, "+Inf": 1000.0}}
    src, _ = make({"http://a:8000/metrics": lambda: httpx.Response(200, text=vllm_text(queue_buckets=state["b"]))},
                  {"default/m": ["a"]})
    src.collect([msp("m")], T0)
    state["b"] = {"0.3": 510.0, "1.0": 915.0, "+Inf": 1020.0}
    src.collect([msp("m")], T0 + 15)
    state["b"] = {"0.3": 2.0, "1.0": 3.0, "+Inf": 4.0}  # the pod restarted
    h = src.collect([msp("m")], T0 + 30)["default/m"].queue_time_histogram
    assert h is not None and h.cumulative_counts == (12.0, 18.0, 24.0)


def test_a_quiet_window_is_an_empty_histogram_not_a_missing_one() -> None:
    b = {"0.3": 5.0, "+Inf": 6.0}
    src, _ = make({"http://a:8000/metrics": text(vllm_text(queue_buckets=b))}, {"default/m": ["a"]})
    src.collect([msp("m")], T0)
    s = src.collect([msp("m")], T0 + 15)["default/m"]
    assert s.queue_time_histogram is not None and s.queue_time_histogram.total == 0
    assert s.queue_time_p90_seconds is MISSING


def test_a_failing_pod_keeps_its_last_numbers_and_makes_the_signal_older() -> None:
    up = {"b": True}

    def b() -> httpx.Response:
        if not up["b"]:
            raise httpx.ConnectError("refused")
        return httpx.Response(200, text=vllm_text(waiting=3))

    src, reg = make({"http://a:8000/metrics": text(vllm_text(waiting=2)), "http://b:8000/metrics": b},
                    {"default/m": ["a", "b"]})
    src.collect([msp("m")], T0)
    up["b"] = False
    s = src.collect([msp("m")], T0 + 20)["default/m"]
    assert s.waiting.value == 5 and s.waiting.age_seconds == 20
    assert error_count(reg, "scrape", "connect") == 1
    assert src.failed_policies == {"default/m"}


def test_pods_that_left_the_target_list_stop_counting() -> None:
    targets = {"default/m": ["a", "b"]}
    src, _ = make({"http://a:8000/metrics": text(vllm_text(waiting=2)),
                   "http://b:8000/metrics": text(vllm_text(waiting=3))}, targets)
    src.collect([msp("m")], T0)
    targets["default/m"] = ["a"]
    assert src.collect([msp("m")], T0 + 5)["default/m"].waiting.value == 2


def test_no_pods_means_missing() -> None:
    src, _ = make({}, {"default/m": []})
    assert src.collect([msp("m")], T0)["default/m"].waiting is MISSING


def test_only_the_policy_model_is_read_from_a_shared_endpoint() -> None:
    body = vllm_text("a", waiting=7) + vllm_text("b", waiting=1).replace("# TYPE", "# IGNORED")
    src, _ = make({"http://x:8000/metrics": text(body)}, {"default/a": ["x"], "default/b": ["x"]})
    out = src.collect([msp("a"), msp("b")], T0)
    assert out["default/a"].waiting.value == 7 and out["default/b"].waiting.value == 1


@pytest.mark.parametrize("response, kind", [
    (httpx.Response(500, text="boom"), "http_status"),
    (httpx.Response(200, text="vllm:num_requests_waiting{model_name=\"m\" 3\n"), "parse_error"),
    (httpx.Response(200, content=b"x" * 2_000_000), "too_large"),
])
def test_bad_pods_are_counted_and_never_become_numbers(response: httpx.Response, kind: str) -> None:
    src, reg = make({"http://a:8000/metrics": lambda: response}, {"default/m": ["a"]}, max_bytes=1_000_000)
    s = src.collect([msp("m")], T0)["default/m"]
    assert s.waiting is MISSING
    assert error_count(reg, "scrape", kind) == 1


def test_nan_and_negative_series_are_dropped_and_counted() -> None:
    body = vllm_text(waiting=2).replace("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0",
                                        "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} NaN")
    body = body.replace('vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.0',
                        'vllm:kv_cache_usage_perc{engine="0",model_name="m"} -1')
    src, reg = make({"http://a:8000/metrics": text(body)}, {"default/m": ["a"]})
    s = src.collect([msp("m")], T0)["default/m"]
    assert s.waiting.value == 2 and s.running is MISSING and s.kv_cache_usage is MISSING
    assert error_count(reg, "scrape", "non_finite") == 1 and error_count(reg, "scrape", "negative") == 1


def _slow_loris_server() -> tuple[socket.socket, int]:
    """A pod that sends headers, then one byte every 0.2 s forever (until the test closes it)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    def drip(conn: socket.socket) -> None:
        try:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n")
            for _ in range(100):
                conn.sendall(b"#")
                time.sleep(0.2)
        except OSError:
            pass
        finally:
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_a_slow_loris_pod_is_cut_off_by_the_total_deadline() -> None:
    srv, port = _slow_loris_server()
    try:
        tel, reg = fresh_telemetry()
        src = ScrapeMetricsSource({"default/m": [f"127.0.0.1:{port}"]}, telemetry=tel, deadline_seconds=1.0,
                                  read_timeout_seconds=5.0)
        t = time.monotonic()
        s = src.collect([msp("m")], T0)["default/m"]
        assert time.monotonic() - t < 3.0
        assert s.waiting is MISSING
        assert error_count(reg, "scrape", "timeout") == 1
    finally:
        srv.close()


def test_concurrency_is_bounded() -> None:
    live = {"now": 0, "max": 0}

    async def handler(request: httpx.Request) -> httpx.Response:
        live["now"] += 1
        live["max"] = max(live["max"], live["now"])
        await asyncio.sleep(0.01)
        live["now"] -= 1
        return httpx.Response(200, text=vllm_text(waiting=1))

    tel, _ = fresh_telemetry()
    pods = [f"p{i}" for i in range(40)]
    src = ScrapeMetricsSource({"default/m": pods}, telemetry=tel, concurrency=5,
                              transport=httpx.MockTransport(handler))
    s = src.collect([msp("m")], T0)["default/m"]
    assert s.waiting.value == 40
    assert live["max"] <= 5


def test_collect_inside_an_event_loop_says_to_await_collect_async() -> None:
    src, _ = make({}, {"default/m": []})

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="collect_async"):
            src.collect([msp("m")], T0)

    asyncio.run(inside())
