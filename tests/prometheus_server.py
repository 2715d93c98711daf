"""A real Prometheus server process for tests (Debian's package, installed by `.ci/install-prometheus.sh`).

Shared by the integration tests and the end-to-end drill. A missing binary fails the test with the
command that installs it: never a silent skip.
"""

from __future__ import annotations

import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

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
                 extra_args: tuple[str, ...] = (), tls: tuple[Path, Path, Path] | None = None) -> None:
        """`tls`: (CA bundle, server certificate, its key): serve HTTPS only (`--web.config.file`)."""
        self.binary = require_binary("prometheus")
        self.port = port or free_port()
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_path = workdir / "prometheus.yml"
        self.config_path.write_text(config)
        self.storage = workdir / "tsdb"
        self.storage.mkdir(parents=True, exist_ok=True)
        self.retention = retention
        self.extra_args = extra_args
        self.ca_file: Path | None = None
        if tls is not None:
            self.ca_file, cert, key = tls
            web = workdir / "web.yml"
            web.write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}\n")
            self.extra_args = (*extra_args, f"--web.config.file={web}")
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"{'https' if self.ca_file else 'http'}://127.0.0.1:{self.port}"

    def _get(self, path: str, **kwargs: Any) -> httpx.Response:
        verify = ssl.create_default_context(cafile=str(self.ca_file)) if self.ca_file else True
        return httpx.get(self.url + path, verify=verify, **kwargs)

    def start(self, timeout: float = 30.0) -> None:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.config_path}", f"--storage.tsdb.path={self.storage}",
             f"--web.listen-address=127.0.0.1:{self.port}", f"--storage.tsdb.retention.time={self.retention}",
             "--web.enable-lifecycle", *self.extra_args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self._get("/-/ready", timeout=0.5).status_code == 200:
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
        r = self._get("/api/v1/query", params={"query": promql}, timeout=5)
        r.raise_for_status()
        result: list[dict[str, object]] = r.json()["data"]["result"]
        return result

    def wait_for(self, promql: str, n: int = 1, timeout: float = 20.0) -> None:
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


def emulator_scrape_config(emulator_url: str) -> str:
    """Scrape every replica the emulator lists at /targets (HTTP service discovery) once a second."""
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
scrape_configs:
  - job_name: emulator
    http_sd_configs:
      - url: {emulator_url}/targets
        refresh_interval: 1s
"""
