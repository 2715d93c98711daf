"""The profile command's shell: SLO from a policy, one-line errors before any load is sent."""

from __future__ import annotations

import socket
from pathlib import Path

from click.testing import CliRunner

from autoscaler.cli import main
from autoscaler.cli.profile import _slo

POLICY = Path(__file__).resolve().parents[3] / "policies/chat-deployment.yaml"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_slo_and_model_come_from_the_policy_and_options_override() -> None:
    slo, model = _slo(str(POLICY), None, None, None)
    assert (slo.ttft_seconds, slo.quantile, model) == (2.0, 0.99, "meta-llama/Llama-3.1-8B-Instruct")
    slo, _ = _slo(str(POLICY), 1.0, None, 0.9)
    assert (slo.ttft_seconds, slo.queue_time_seconds, slo.quantile) == (1.0, None, 0.9)


def test_an_unreachable_server_is_one_line_not_a_ramp() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    r = CliRunner().invoke(main, ["profile", "--url", url, "--model", "m"])
    assert r.exit_code == 1 and "a first request" in r.output and "ConnectError" in r.output
    r = CliRunner().invoke(main, ["profile", "--url", url])
    assert r.exit_code == 1 and "pass --model" in r.output


def test_bad_ramp_settings_are_usage_errors() -> None:
    r = CliRunner().invoke(main, ["profile", "--url", "http://x", "--start-rate", "5", "--max-rate", "1"])
    assert r.exit_code == 2 and "below the start rate" in r.output
