"""`inference-autoscaler drain-check NODE` against the fake API server: the controller's verdict, from the
cluster, with exit codes 0 (safe), 1 (not safe), 2 (error)."""

from __future__ import annotations

import socket
import time

from click.testing import CliRunner

from autoscaler.cli import main
from tests.unit.controller.conftest import CountingSource, make_controller
from tests.unit.controller.test_drain import _cordon, _fleet, _pod
from tests.unit.controller.test_run_command import kubeconfig


def _check(kube, tmp_path, node: str):
    return CliRunner().invoke(main, ["drain-check", node, "--kubeconfig", kubeconfig(tmp_path, kube.url)])


def test_drain_check_answers_from_the_cluster_with_the_controllers_verdict(kube, api, tmp_path):
    _fleet(kube)
    now = [time.time()]
    c = make_controller(api, CountingSource(prompt_tps=1.0, gen_tps=1.0), clock=lambda: now[0])
    c.run_once()

    before = _check(kube, tmp_path, "gpu-1")
    assert before.exit_code == 1, before.output
    assert "models/llama: 2 replica(s) on gpu-1 (not cordoned yet); 0/2 replacement(s) ready" in before.output
    assert "cordon it first (kubectl cordon gpu-1)" in before.output

    free = _check(kube, tmp_path, "gpu-3")
    assert free.exit_code == 0 and "no policy's target has replicas on gpu-3" in free.output

    _cordon(kube, "gpu-1")
    now[0] += 20
    c.run_once()
    waiting = _check(kube, tmp_path, "gpu-1")
    assert waiting.exit_code == 1 and "(cordoned)" in waiting.output and "4 needed at the SLO" in waiting.output

    kube.put("", "pods", _pod("llama-4", "gpu-3"), kind="Pod")
    half = _check(kube, tmp_path, "gpu-1")
    assert half.exit_code == 1 and "1/2 replacement(s) ready" in half.output

    kube.put("", "pods", _pod("llama-5", "gpu-3"), kind="Pod")
    ready = _check(kube, tmp_path, "gpu-1")
    assert ready.exit_code == 0, ready.output
    assert "2/2 replacement(s) ready elsewhere; yes" in ready.output
    assert ready.output.strip().splitlines()[-1] == "yes: draining gpu-1 keeps the SLO of 1 policy"


def test_drain_check_is_not_safe_while_demand_is_unknown(kube, api, tmp_path):
    _fleet(kube)
    make_controller(api, CountingSource(fresh=False)).run_once()
    _cordon(kube, "gpu-1")
    for i in (4, 5):
        kube.put("", "pods", _pod(f"llama-{i}", "gpu-3"), kind="Pod")
    r = _check(kube, tmp_path, "gpu-1")
    assert r.exit_code == 1 and "need at the SLO is unknown" in r.output


def test_drain_check_errors_name_the_fix_in_one_line(kube, tmp_path):
    missing = _check(kube, tmp_path, "nope")
    assert missing.exit_code == 2
    assert missing.output.strip() == "Error: node 'nope' not found: check the name (kubectl get nodes)"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = CliRunner().invoke(main, ["drain-check", "gpu-1", "--kubeconfig",
                                     kubeconfig(tmp_path, f"http://127.0.0.1:{port}")])
    assert down.exit_code == 2
    (line,) = down.output.strip().splitlines()
    assert line.startswith(f"Error: cannot reach the Kubernetes API server at http://127.0.0.1:{port}")
