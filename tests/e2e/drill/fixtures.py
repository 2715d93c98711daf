"""pytest fixtures of the drill (imported by tests/e2e/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..cluster import LocalCluster
from .release import WATCHED, Release, install, uninstall
from .tools import require_tool
from .workspace import Workspace


@pytest.fixture(scope="session")
def autoscaler_release(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Release]:
    """The chart, `helm install`ed once per session; its ServiceAccount's kubeconfig for the controllers."""
    require_tool("helm")
    require_tool("prometheus")
    release = install(local_cluster, tmp_path_factory.mktemp("release"))
    try:
        yield release
    finally:
        uninstall(local_cluster, release)


@pytest.fixture
def workspace(local_cluster: LocalCluster, autoscaler_release: Release,
              tmp_path: Path) -> Iterator[Callable[[str], Workspace]]:
    """`workspace("drill")`: the test's watched namespace, its nodes and processes, cleaned up after."""
    made: list[Workspace] = []

    def make(key: str) -> Workspace:
        ws = Workspace(local_cluster, autoscaler_release, WATCHED[key], tmp_path)
        made.append(ws)
        return ws

    yield make
    for ws in reversed(made):
        ws.close()
