"""`inference-autoscaler run` with a plain kubeconfig (ServiceAccount-style bearer token)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from autoscaler.cli import main
from tests.unit.controller.conftest import add_deployment, add_policy, condition, status_of


def kubeconfig(tmp_path: Path, server: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "test",
                "clusters": [{"name": "fake", "cluster": {"server": server}}],
                "users": [{"name": "sa", "user": {"token": "service-account-token"}}],
                "contexts": [{"name": "test", "context": {"cluster": "fake", "user": "sa", "namespace": "models"}}],
            }
        )
    )
    return str(path)


def test_run_once_with_a_kubeconfig_token_reconciles_and_exits(kube, tmp_path):
    add_deployment(kube, replicas=2, ready=0)  # no ready pods: nothing to scrape, metrics are missing
    add_policy(kube)
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--kubeconfig",
            kubeconfig(tmp_path, kube.url),
            "--once",
            "--metrics-port",
            "0",
            "--health-port",
            "0",
            "--leader-elect",
            "--lease-namespace",
            "kube-system",
            "--log-format",
            "text",
        ],
    )
    assert result.exit_code == 0, result.output
    assert kube.authorizations == {"Bearer service-account-token"}
    st = status_of(kube)
    assert st["currentReplicas"] == 2 and st["desiredReplicas"] == 2  # unknown demand never scales down
    assert condition(st, "MetricsAvailable")["status"] == "False"
    lease = kube.get("coordination.k8s.io", "leases", "kube-system", "inference-autoscaler")
    assert lease is not None and lease["spec"]["holderIdentity"] is None  # released after the tick


def test_run_reports_an_unusable_kubeconfig_readably(tmp_path):
    bad = tmp_path / "nope"
    bad.write_text("not: [a kubeconfig")
    result = CliRunner().invoke(main, ["run", "--kubeconfig", str(bad), "--once"])
    assert result.exit_code != 0
    assert "cannot configure the Kubernetes client" in result.output


def test_run_once_reports_an_unreachable_api_server_in_one_line(tmp_path):
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-m", "autoscaler.cli", "run", "--once", "--kubeconfig",
         kubeconfig(tmp_path, f"https://127.0.0.1:{port}"), "--metrics-port", "0", "--health-port", "0"],
        capture_output=True, text=True, timeout=120, cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.returncode == 1
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"Error: cannot reach the Kubernetes API server at https://127.0.0.1:{port}")
    assert "Connection refused" in lines[0] and "Traceback" not in lines[0]


def test_run_once_logs_the_ticks_counts(kube, tmp_path):
    add_deployment(kube, replicas=2, ready=0)
    add_policy(kube)
    result = CliRunner().invoke(main, ["run", "--kubeconfig", kubeconfig(tmp_path, kube.url), "--once",
                                       "--metrics-port", "0", "--health-port", "0", "--log-format", "json"])
    assert result.exit_code == 0, result.output
    done = [json.loads(line) for line in result.output.splitlines()
            if line.startswith("{") and '"one tick done"' in line]
    assert len(done) == 1
    assert {k: done[0][k] for k in ("due", "reconciled", "writes", "errors", "invalid", "notLeader")} == {
        "due": 1, "reconciled": 1, "writes": 0, "errors": 0, "invalid": 0, "notLeader": False}
    assert done[0]["seconds"] >= 0
