"""pytest fixtures: a session-wide :class:`LocalCluster`.

In a conftest.py:  ``from .cluster.fixtures import local_cluster  # noqa: F401``

Environment:
  KUBE_BIN_DIR          where .ci/build-kube.sh put the binaries
  E2E_READY_DELAY       default KWOK cold-start delay in seconds (default 5)
  E2E_KEEP_CLUSTER=1    keep the cluster's workdir (certs, logs, etcd data) after the run

Missing binaries make the fixture FAIL (not skip): CI runs .ci/build-kube.sh first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from .cluster import LocalCluster, MissingBinariesError, check_binaries


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    problem = None
    try:
        check_binaries()
    except MissingBinariesError as e:
        problem = str(e)
    if problem:
        pytest.fail(problem, pytrace=False)
    cluster = LocalCluster(ready_delay=float(os.environ.get("E2E_READY_DELAY", "5")))
    cluster.start()
    print(f"\nlocal_cluster: {cluster.server_url} kubeconfig={cluster.kubeconfig_path} "
          f"up in {cluster.startup_seconds:.1f}s", file=sys.stderr)
    try:
        yield cluster
    finally:
        cluster.stop()
