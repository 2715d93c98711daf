"""The chart installed once per session, and the identity the controllers run as.

Values: no controller pod (replicaCount 0: nothing can run containers on KWOK nodes; the controller
runs as a local process with the chart's own arguments), leader election on with drill-scale timings,
and per-namespace RBAC (watchNamespaces) so "cannot act outside its namespaces" is the chart's doing.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cluster import LocalCluster
from .helm import HelmRelease
from .identity import service_account_kubeconfig

RELEASE_NAME = "ia"
RELEASE_NAMESPACE = "inference-autoscaler"
# One watched namespace per test (so tests cannot see each other's policies), plus one that is not.
WATCHED = {
    "drill": "ia-drill",
    "prometheus": "ia-fault-prom",
    "leader": "ia-fault-leader",
    "apiserver": "ia-fault-apiserver",
    "rbac": "ia-fault-rbac",
    "invalid": "ia-fault-invalid",
    "kserve": "ia-fault-kserve",
    "isolation": "ia-fault-isolation",
    "drain": "ia-drain",
    "warm": "ia-warm-drill",
    "scaledown": "ia-scale-down",
    "zero": "ia-scale-from-zero",
}
UNWATCHED = "ia-unwatched"
LEASE_SECONDS, RENEW_DEADLINE_SECONDS, RETRY_SECONDS = 6, 4, 1

VALUES: dict[str, Any] = {
    "replicaCount": 0,
    "leaderElection": {
        "enabled": True,
        "leaseDurationSeconds": LEASE_SECONDS,
        "renewDeadlineSeconds": RENEW_DEADLINE_SECONDS,
        "retryPeriodSeconds": RETRY_SECONDS,
    },
    "watchNamespaces": sorted(WATCHED.values()),
    "logLevel": "info",
    # The placeholders' PriorityClass, and Deployment writes in the warm drill's namespace only.
    "warmCapacity": {"enabled": True, "namespaces": [WATCHED["warm"]]},
}


@dataclass
class Release:
    helm: HelmRelease
    service_account: str
    kubeconfig: Path  # authenticates as the chart's ServiceAccount
    controller_args: list[str]  # the chart Deployment's container args
    install_output: str


def install(cluster: LocalCluster, workdir: Path) -> Release:
    core = cluster.core_v1()
    for ns in (*WATCHED.values(), UNWATCHED):
        with contextlib.suppress(Exception):
            core.create_namespace({"metadata": {"name": ns}})
    helm = HelmRelease(RELEASE_NAME, RELEASE_NAMESPACE, cluster.kubeconfig_path, VALUES)
    out = helm.install(workdir)
    sa = helm.service_account
    kubeconfig = service_account_kubeconfig(cluster, RELEASE_NAMESPACE, sa, workdir / "controller.kubeconfig")
    return Release(helm, sa, kubeconfig, helm.controller_args(), out)


def uninstall(cluster: LocalCluster, release: Release) -> None:
    with contextlib.suppress(Exception):
        release.helm.uninstall()
    core = cluster.core_v1()
    for ns in (*WATCHED.values(), UNWATCHED, RELEASE_NAMESPACE):
        with contextlib.suppress(Exception):
            core.delete_namespace(ns)
