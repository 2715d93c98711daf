"""Fixtures: a real Prometheus (Debian's package) scraping the emulator.

Prometheus runs on a free 127.0.0.1 port with a generated config (1 s scrapes, HTTP service discovery
from the emulator's /targets) and its own temporary TSDB, and is torn down after. If it is not
installed the tests fail with the command that installs it: they never skip silently.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from autoscaler.emulator import fixed_replicas
from autoscaler.emulator.build import build_emulator
from autoscaler.emulator.server import EmulatorServer
from simulations.profiles import COLD_START_PROFILES, ServingProfile
from simulations.trace import Trace

pytestmark = pytest.mark.integration

INSTALL_HINT = "run `bash .ci/install-prometheus.sh` (installs Debian's prometheus and promtool)"


def require_binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH: {INSTALL_HINT}", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrometheusProcess:
    """One Prometheus server process; `stop`/`kill`/`start` may be repeated on the same port and TSDB."""

    def __init__(self, config: str, workdir: Path, *, port: int | None = None, retention: str = "1d",
                 extra_args: tuple[str, ...] = ()) -> None:
        self.binary = require_binary("prometheus")
        self.port = port or free_port()
        self.workdir = workdir
        self.config_path = workdir / "prometheus.yml"
        self.config_path.write_text(config)
        self.storage = workdir / "tsdb"
        self.storage.mkdir(exist_ok=True)
        self.retention = retention
        self.extra_args = extra_args
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> None:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.config_path}", f"--storage.tsdb.path={self.storage}",
             f"--web.listen-address=127.0.0.1:{self.port}", f"--storage.tsdb.retention.time={self.retention}",
             "--web.enable-lifecycle", *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/-/ready", timeout=0.5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"prometheus not ready after {timeout}s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])

    def kill(self) -> None:
        """SIGKILL, as a crashed Prometheus."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def query(self, promql: str) -> list[dict[str, object]]:
        r = httpx.get(self.url + "/api/v1/query", params={"query": promql}, timeout=5)
        r.raise_for_status()
        result: list[dict[str, object]] = r.json()["data"]["result"]
        return result

    def wait_for(self, promql: str, n: int = 1, timeout: float = 15.0) -> None:
        """Until `promql` returns at least n series."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if len(self.query(promql)) >= n:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"no samples for {promql!r} after {timeout}s:\n{self.log_tail()}")


def scrape_config(emulator: EmulatorServer) -> str:
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: emulator
    http_sd_configs:
      - url: {emulator.base_url}/targets
        refresh_interval: 1s
"""


MODEL = "llama-emulated"
REPLICAS = 3
# Prefill 3,000 tokens/s per replica with ~850-token prompts: ~3.5 requests/s each, so 9 requests/s on 3
# replicas runs near saturation and requests queue for a few hundred ms to seconds.
SERVING = ServingProfile(prefill_tokens_per_second=3000.0)
ARRIVALS_PER_SECOND = 9.0


def near_saturation_trace(seconds: float = 900.0, seed: int = 7) -> Trace:
    rng = np.random.default_rng(seed)
    n = int(ARRIVALS_PER_SECOND * seconds)
    t = np.cumsum(rng.exponential(1.0 / ARRIVALS_PER_SECOND, n))
    return Trace("near-saturation", t, rng.integers(200, 1500, n), rng.integers(20, 300, n), 0.0)


@pytest.fixture(scope="package")
def emulator() -> Iterator[EmulatorServer]:
    server = build_emulator(near_saturation_trace(), fixed_replicas(REPLICAS), model=MODEL, namespace="serving",
                            serving=SERVING, cold_start=COLD_START_PROFILES["warm"])
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="package")
def prometheus(emulator: EmulatorServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    prom = PrometheusProcess(scrape_config(emulator), tmp_path_factory.mktemp("prometheus"))
    prom.start()
    try:
        prom.wait_for("vllm:num_requests_waiting", n=REPLICAS)
        yield prom
    finally:
        prom.stop()
