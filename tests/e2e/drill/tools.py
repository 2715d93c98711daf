"""External tools the drill needs, and failures (never skips) that name the script installing them."""

from __future__ import annotations

import json
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

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


REPO_ROOT = Path(__file__).resolve().parents[3]


def autoscaler_command() -> list[str]:
    """The `inference-autoscaler` CLI of the package under test (this interpreter's install of it)."""
    return [sys.executable, "-m", "autoscaler.cli"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api_result(call: Callable[[], Any]) -> tuple[int, str]:
    """(HTTP status, the API server's message) of one call; (200, "") when it succeeds."""
    try:
        call()
    except client.ApiException as e:
        try:
            return int(e.status), str(json.loads(e.body)["message"])
        except (ValueError, KeyError, TypeError):
            return int(e.status), str(e.body)
    return 200, ""
