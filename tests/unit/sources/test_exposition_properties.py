"""Property tests: whatever a pod sends, reading it never crashes and never invents a number."""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoscaler.sources.engines import SignalName, engine_metrics
from autoscaler.sources.exposition import ExpositionError, read_pod_metrics

VLLM = engine_metrics("vllm")
NAMES = ["vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
         "vllm:prompt_tokens_total", "vllm:request_queue_time_seconds_bucket", "other_metric"]

garbage_line = st.one_of(
    st.text(max_size=80),
    st.builds(lambda n, labels, v: f"{n}{labels} {v}", st.sampled_from(NAMES),
              st.sampled_from(["", '{model_name="m"}', '{model_name="m",engine="0"}', "{", '{le="x"}',
                               '{model_name="m",le="+Inf"}', '{model_name=m}']),
              st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=8))),
    st.sampled_from(["# TYPE vllm:num_requests_waiting gauge", "# TYPE vllm:prompt_tokens counter",
                     "# HELP x", "# TYPE x histogram", "# EOF", ""]),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(garbage_line, max_size=30))
def test_garbage_never_crashes_and_never_yields_non_finite_or_negative_values(lines: list[str]) -> None:
    try:
        m = read_pod_metrics("\n".join(lines) + "\n", VLLM, "m")
    except ExpositionError:
        return
    for total, n in m.gauges.values():
        assert math.isfinite(total) and total >= 0 and n >= 1
    for series in m.counters.values():
        assert all(math.isfinite(v) and v >= 0 for v in series.values())
    for buckets in m.buckets.values():
        assert all(math.isfinite(c) and c >= 0 and le == le for le, c in buckets.values())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_crash(raw: bytes) -> None:
    with contextlib.suppress(ExpositionError):
        read_pod_metrics(raw.decode("utf-8", errors="replace"), VLLM, "m")


values = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
gauge_values = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)  # plausible


@settings(max_examples=200, deadline=None)
@given(waiting=gauge_values, running=gauge_values, prompt=values, engines=st.integers(1, 4))
def test_well_formed_text_round_trips_the_values(waiting: float, running: float, prompt: float,
                                                 engines: int) -> None:
    lines = ["# TYPE vllm:num_requests_waiting gauge", "# TYPE vllm:prompt_tokens counter"]
    for e in range(engines):
        lines.append(f'vllm:num_requests_waiting{{engine="{e}",model_name="m"}} {waiting!r}')
        lines.append(f'vllm:num_requests_running{{engine="{e}",model_name="m"}} {running!r}')
        lines.append(f'vllm:prompt_tokens_total{{engine="{e}",model_name="m"}} {prompt!r}')
    m = read_pod_metrics("\n".join(lines) + "\n", VLLM, "m")
    assert m.gauges[SignalName.WAITING] == (waiting * engines, engines) or math.isclose(
        m.gauges[SignalName.WAITING][0], waiting * engines, rel_tol=1e-12)
    assert len(m.counters[SignalName.PROMPT_TOKENS_RATE]) == engines
    assert all(v == prompt for v in m.counters[SignalName.PROMPT_TOKENS_RATE].values())


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, 2000))
def test_truncated_text_parses_to_a_subset_or_errors(cut: int) -> None:
    from .helpers import vllm_text

    full = vllm_text(waiting=3, running=4, prompt=100, queue_buckets={"0.3": 1, "1.0": 2, "+Inf": 3})
    try:
        m = read_pod_metrics(full[:cut], VLLM, "m")
    except ExpositionError:
        return
    if SignalName.WAITING in m.gauges:
        # A cut inside the number may shorten it ("3.0" -> "3."), never make it larger.
        assert m.gauges[SignalName.WAITING][0] <= 3


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


@settings(max_examples=300, deadline=None)
@given(name=st.from_regex(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,20}", fullmatch=True),
       labels=st.dictionaries(st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,8}", fullmatch=True),
                              st.text(max_size=12), max_size=3),
       value=st.one_of(st.floats(allow_nan=False), st.sampled_from([math.inf, -math.inf])),
       ts=st.one_of(st.none(), st.integers(0, 2**40)))
def test_the_fast_path_reads_lines_exactly_as_prometheus_client_does(name: str, labels: dict[str, str],
                                                                     value: float, ts: int | None) -> None:
    from prometheus_client.parser import text_string_to_metric_families
    from prometheus_client.utils import floatToGoString

    from autoscaler.sources.exposition import _samples

    lab = "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}" if labels else ""
    line = f"{name}{lab} {floatToGoString(value)}" + (f" {ts}" if ts is not None else "")
    try:
        want = [(s.name, dict(s.labels), float(s.value))
                for f in text_string_to_metric_families(line + "\n") for s in f.samples]
    except ValueError:  # e.g. a reserved `__` label name: the fast path must refuse it too
        with pytest.raises(ValueError):
            list(_samples([line]))
        return
    assert list(_samples([line])) == want
