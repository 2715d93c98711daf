"""The target cache forgets the memos of targets whose objects are gone (a long-running controller's
memory follows the live targets)."""

from __future__ import annotations

from typing import Any

from autoscaler.controller import targetcache
from autoscaler.controller.informer import Informer
from autoscaler.controller.targetcache import TargetCache

KIND = ("apps", "v1", "deployments")


def _dep(name: str, rv: str) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}}},
        "status": {"replicas": 2},
    }


class _NoDirect:
    def object(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("the cache should answer")

    def scale(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("the cache should answer")


def _cache(n: int) -> tuple[TargetCache, Informer]:
    inf = Informer("deployments", lambda **_: None)
    for i in range(n):
        inf._apply("ADDED", _dep(f"d{i}", str(i + 1)))
    inf.synced.set()
    cache = TargetCache(_NoDirect(), lambda kind: [("ns", inf)])  # type: ignore[arg-type]
    return cache, inf


def test_prune_drops_deleted_targets_only() -> None:
    cache, inf = _cache(3)
    for i in range(3):
        assert cache.scale(*KIND, "ns", f"d{i}")["spec"]["replicas"] == 2
    cache.wrote(*KIND, "ns", "d1", "2", {"spec": {"replicas": 5}})
    inf._apply("DELETED", _dep("d1", "9"))
    assert cache.prune() == 1
    assert set(cache._scales) == {(KIND, "ns", "d0"), (KIND, "ns", "d2")}
    assert not cache._written
    assert cache.prune() == 0


def test_prune_runs_on_its_own_as_memos_accumulate(monkeypatch: Any) -> None:
    monkeypatch.setattr(targetcache, "PRUNE_EVERY", 4)
    cache, inf = _cache(4)
    for i in range(3):
        cache.scale(*KIND, "ns", f"d{i}")
    for i in range(3):
        inf._apply("DELETED", _dep(f"d{i}", "99"))
    cache.scale(*KIND, "ns", "d3")  # the 4th memo write sweeps
    assert set(cache._scales) == {(KIND, "ns", "d3")}


def test_prune_keeps_memos_while_the_watch_is_not_synced() -> None:
    cache, inf = _cache(1)
    cache.scale(*KIND, "ns", "d0")
    inf._apply("DELETED", _dep("d0", "5"))
    inf.synced.clear()  # a relist in progress: absence proves nothing
    assert cache.prune() == 0
