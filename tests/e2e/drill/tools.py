"""External tools the drill needs, and failures (never skips) that name the script installing them."""

from __future__ import annotations

import shutil
import socket
import sys

import pytest

INSTALLERS = {
    "helm": "bash .ci/install-helm.sh",
    "kubectl": "bash .ci/install-helm.sh",
    "prometheus": "bash .ci/install-prometheus.sh",
}


def require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH: run `{INSTALLERS[name]}`", pytrace=False)
    return path


def autoscaler_command() -> list[str]:
    """The `inference-autoscaler` CLI of the package under test (the entry point, else its module)."""
    exe = shutil.which("inference-autoscaler")
    if exe:
        return [exe]
    return [sys.executable, "-c", "from autoscaler.cli import main; main()"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
