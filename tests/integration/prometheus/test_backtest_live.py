"""`inference-autoscaler backtest` against a real Prometheus holding months-old history.

The history is generated from the bundled Azure conversation trace (2023-11-16, ~1 h): per-replica vLLM
counters, gauges and queue-time buckets every 15 s, 2 replicas for the first 30 minutes and 3 after,
loaded with `promtool tsdb create-blocks-from openmetrics`; Prometheus keeps it with a 100-year retention.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from autoscaler.backtest import fetch_history
from autoscaler.backtest.openmetrics import HistorySpec, history_file
from autoscaler.backtest.prom_range import PrometheusRange
from autoscaler.cli.backtest import backtest
from autoscaler.sources.engines import SignalName
from autoscaler.sources.histogram import quantile_of
from simulations.scenario import bundled_traces_dir
from simulations.trace import Trace
from simulations.trace_loaders import load_azure_csv
from tests.prometheus_server import PrometheusProcess, require_binary
from tests.unit.sources.helpers import msp

pytestmark = pytest.mark.integration
SWITCH_S = 1800.0
PROMPT_TPS = 3000.0

POLICY = """\
apiVersion: autoscaler.inference.dev/v1alpha1
kind: ModelScalingPolicy
metadata: {name: llama, namespace: prod}
spec:
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: llama}
  model: {name: llama, engine: vllm}
  capacity: {promptTokensPerSecond: 3000, generationTokensPerSecond: 2500}
  replicas: {min: 1, max: 20}
"""


def conv_trace() -> Trace:
    """The copy shipped with the package (not $INFERENCE_AUTOSCALER_TRACES: the asserted numbers are its)."""
    return load_azure_csv(bundled_traces_dir() / "azure_llm_2023_conv.csv.gz")


@pytest.fixture(scope="module")
def history_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusProcess, Trace]]:
    promtool = require_binary("promtool")
    work = tmp_path_factory.mktemp("backtest-prom")
    trace = conv_trace()
    om = work / "history.om"
    history_file(om, trace.arrival_s, trace.prompt_tokens, trace.output_tokens, trace.start_epoch,
                 HistorySpec(model="llama", namespace="prod", prompt_tokens_per_second=PROMPT_TPS),
                 lambda t: 2 if t < SWITCH_S else 3)
    prom = PrometheusProcess("global:\n  scrape_interval: 15s\nscrape_configs: []\n", work, retention="100y")
    subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(om), str(prom.storage)],
                   check=True, capture_output=True, timeout=120)
    prom.start()
    try:
        yield prom, trace
    finally:
        prom.stop()


def test_history_is_read_with_the_live_source_promql(history_prometheus: tuple[PrometheusProcess, Trace]) -> None:
    prom, trace = history_prometheus
    start, end = trace.start_epoch + 120, trace.start_epoch + 3300
    api = PrometheusRange(prom.url)
    h = fetch_history(api, msp("llama", namespace="prod"), start, end, 60.0)
    rate = h.signals[SignalName.PROMPT_TOKENS_RATE]
    assert np.isfinite(rate).all()
    # Tokens per minute from Prometheus vs the trace, over the whole range: within 5 %.
    sel = (trace.arrival_s >= 120) & (trace.arrival_s < 3300)
    want = float(trace.prompt_tokens[sel].sum())
    assert float(rate.sum() * 60) == pytest.approx(want, rel=0.05)
    assert set(h.replicas[h.times < trace.start_epoch + SWITCH_S - 60]) == {2}
    assert set(h.replicas[h.times > trace.start_epoch + SWITCH_S + 120]) == {3}
    assert h.queries == len(SignalName) + 1  # one range query per signal, plus the replica count
    # Queue-time histograms per step from the bucket increases (1 m window, 60 s steps: windows tile the
    # range), requests within 10 % of the trace's; the p90 signal is their histogram_quantile.
    hists = h.histograms[SignalName.QUEUE_TIME_P90]
    assert all(x is not None for x in hists)
    served = float(((trace.arrival_s >= 60) & (trace.arrival_s < 3300)).sum())
    assert sum(x.total for x in hists if x is not None) == pytest.approx(served, rel=0.10)
    p90 = h.signals[SignalName.QUEUE_TIME_P90]
    for x, v in zip(hists, p90, strict=True):
        q = quantile_of(0.9, x) if x is not None else None
        assert (q is None and np.isnan(v)) or q == v
    assert all(x is None for x in h.histograms[SignalName.TTFT_P90])  # the history has no TTFT buckets


def test_backtest_cli_reports_both_plans_and_writes_a_plot(history_prometheus: tuple[PrometheusProcess, Trace],
                                                          tmp_path: Path) -> None:
    prom, trace = history_prometheus
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    out = tmp_path / "out"
    r = CliRunner().invoke(backtest, [
        "--prometheus", prom.url, "--policy", str(policy), "--start", str(trace.start_epoch + 120),
        "--end", str(trace.start_epoch + 3300), "--step", "60", "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s["steps"] == 54
    assert 2.0 < s["actual"]["mean_replicas"] < 3.0 and s["actual"]["max_replicas"] == 3
    assert s["ours"]["max_replicas"] >= 1
    for who in ("ours", "actual"):
        e = s[who]["estimate"]
        assert 0.0 <= e["attainment"] <= 1.0 and e["gpu_hours"] > 0
    assert sum(s["reasons"].values()) == 54
    assert (out / "backtest.png").stat().st_size > 10_000
    series = json.loads((out / "backtest.json").read_text())["series"]
    assert len(series["ours"]) == 54 and series["actual"][0] == 2 and series["actual"][-1] == 3


def test_backtest_cli_explains_an_unreachable_prometheus(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    r = CliRunner().invoke(backtest, ["--prometheus", "http://127.0.0.1:9", "--policy", str(policy),
                                      "--start", "2023-11-16T18:20:00Z", "--end", "2023-11-16T18:30:00Z",
                                      "--timeout", "1"])
    assert r.exit_code == 1 and "Prometheus query failed (connect)" in r.output
