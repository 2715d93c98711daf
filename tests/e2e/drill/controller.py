"""`inference-autoscaler run` as a local process, with the chart's arguments and the chart's identity."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from .tools import REPO_ROOT, autoscaler_command, free_port


class ControllerProcess:
    """One controller. `chart_args` are the chart Deployment's container args (`run ...`); `overrides`
    are appended (click keeps the last value of a repeated option)."""

    def __init__(self, chart_args: list[str], kubeconfig: Path, workdir: Path, name: str,
                 overrides: Sequence[str] = ()) -> None:
        self.name = name
        self.metrics_port, self.health_port = free_port(), free_port()
        self.log_path = workdir / f"controller-{name}.log"
        self.argv = [*autoscaler_command(), *chart_args, f"--kubeconfig={kubeconfig}",
                     f"--metrics-port={self.metrics_port}", f"--health-port={self.health_port}",
                     "--log-format=json", *overrides]
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    def start(self, wait_ready: bool = True, timeout: float = 30.0) -> ControllerProcess:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=REPO_ROOT)
        self.started_at = time.time()
        if wait_ready:
            self.wait_ready(timeout)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def readyz(self) -> tuple[int, str]:
        r = httpx.get(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2)
        return r.status_code, r.text.strip()

    def wait_ready(self, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if not self.alive:
                raise RuntimeError(f"controller {self.name} exited ({self.returncode}):\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                code, last = self.readyz()
                if code == 200:
                    return last
            time.sleep(0.2)
        raise RuntimeError(f"controller {self.name} not ready after {timeout}s ({last}):\n{self.log_tail()}")

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def kill(self) -> None:
        """SIGKILL: no lease release, no goodbye."""
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 15.0) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    # -- what it said -------------------------------------------------------------------------------
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, n: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_text().splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
        return out

    @property
    def identity(self) -> str | None:
        for r in self.records():
            if r.get("msg") == "controller started" and r.get("identity"):
                return str(r["identity"])
        return None

    def metrics_text(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=3).text

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of `name` whose labels include `labels` (0 when absent)."""
        total = 0.0
        pat = re.compile(r"^" + re.escape(name) + r"(\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)$")
        for line in self.metrics_text().splitlines():
            m = pat.match(line)
            if not m:
                continue
            got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group("labels") or ""))
            if all(got.get(k) == v for k, v in labels.items()):
                total += float(m.group("value"))
        return total
