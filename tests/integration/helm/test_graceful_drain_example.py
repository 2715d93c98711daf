"""The example's preStop hook, run for real against a stand-in /metrics: it returns once running + waiting are
0, and gives up at its bound when they never are (docs/scale-down.md)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[3] / "charts/inference-autoscaler/examples/vllm-graceful-drain.yaml"


def hook_script() -> str:
    (dep,) = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    cmd = dep["spec"]["template"]["spec"]["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
    assert cmd[:2] == ["python3", "-c"]
    return str(cmd[2])


class Engine:
    """Serves vLLM-style gauges; `busy` requests in flight for the first `busy_polls` polls, then none."""

    def __init__(self, busy_polls: int) -> None:
        self.busy_polls, self.polls = busy_polls, 0
        engine = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                engine.polls += 1
                running = 3 if engine.polls <= engine.busy_polls else 0
                body = (f'vllm:num_requests_running{{model_name="m"}} {running}\n'
                        f'vllm:num_requests_waiting{{model_name="m"}} 0\n').encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/metrics"


def run_hook(url: str, propagation: float, drain: float) -> float:
    script = hook_script()
    assert "http://127.0.0.1:8000/metrics" in script and "PROPAGATION_SECONDS, DRAIN_SECONDS = 10, 180" in script
    script = script.replace("http://127.0.0.1:8000/metrics", url).replace(
        "PROPAGATION_SECONDS, DRAIN_SECONDS = 10, 180", f"PROPAGATION_SECONDS, DRAIN_SECONDS = {propagation}, {drain}")
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    return time.monotonic() - t0


def test_the_hook_waits_until_nothing_is_in_flight() -> None:
    engine = Engine(busy_polls=3)
    took = run_hook(engine.url, propagation=0.2, drain=30)
    assert engine.polls == 4  # three busy answers, then the idle one ends the wait
    assert 2.0 <= took < 10.0  # one-second polls, far from the bound
    engine.httpd.shutdown()


def test_the_hook_gives_up_at_its_bound() -> None:
    engine = Engine(busy_polls=10**6)
    took = run_hook(engine.url, propagation=0.0, drain=2.5)
    assert 2.5 <= took < 6.0 and engine.polls >= 2
    engine.httpd.shutdown()


def test_the_hook_returns_when_the_server_is_gone() -> None:
    took = run_hook("http://127.0.0.1:9/metrics", propagation=0.0, drain=30)
    assert took < 5.0
