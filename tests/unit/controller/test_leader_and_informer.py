"""Leader election on a Lease, informers (watch, 410 relist), HTTP endpoints."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Callable

from kubernetes import client

from autoscaler.controller.informer import Informer
from autoscaler.controller.leader import LeaderConfig, LeaderElector
from tests.unit.controller.conftest import GROUP, add_deployment, add_policy, make_controller, policy
from tests.unit.controller.fakeapi import FakeKube


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def elector(api: client.ApiClient, identity: str, mono: Clock) -> LeaderElector:
    cfg = LeaderConfig("kube-system", "inference-autoscaler", identity, 15, 10, 2)
    return LeaderElector(client.CoordinationV1Api(api), cfg, monotonic=mono)


def test_only_one_instance_holds_the_lease(api):
    mono = Clock()
    a, b = elector(api, "a", mono), elector(api, "b", mono)
    assert a.try_acquire_or_renew() and a.is_leader()
    assert not b.try_acquire_or_renew() and not b.is_leader()
    assert b.standby_healthy


def test_a_standby_takes_over_only_after_the_dead_leaders_lease_expires(api):
    mono = Clock()
    a, b = elector(api, "a", mono), elector(api, "b", mono)
    a.try_acquire_or_renew()  # then a dies without releasing
    assert not b.try_acquire_or_renew()
    mono.t += 14.0
    assert not b.try_acquire_or_renew()
    mono.t += 1.5
    assert b.try_acquire_or_renew() and b.is_leader()


def test_a_leader_that_cannot_renew_stops_acting_before_the_lease_expires(api):
    mono = Clock()
    a = elector(api, "a", mono)
    a.try_acquire_or_renew()
    mono.t += 10.0  # renew deadline passed without a successful renew
    assert not a.is_leader()


def test_release_on_shutdown_hands_over_at_once(api, kube: FakeKube):
    mono = Clock()
    a, b = elector(api, "a", mono), elector(api, "b", mono)
    a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    a.release()
    assert not a.is_leader()
    assert b.try_acquire_or_renew()
    lease = kube.get("coordination.k8s.io", "leases", "kube-system", "inference-autoscaler")
    assert lease is not None and lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1


def test_a_lease_write_race_is_lost_cleanly_by_the_stale_writer(api, kube: FakeKube):
    mono = Clock()
    a = elector(api, "a", mono)
    a.try_acquire_or_renew()
    kube.fail("PUT", r"/leases/inference-autoscaler$", 409, times=1)
    b = elector(api, "b", mono)
    mono.t += 100
    assert not b.try_acquire_or_renew()


def test_a_standby_controller_writes_nothing_until_the_lease_expires(kube, api, source):
    add_deployment(kube, replicas=1)
    add_policy(kube)
    mono = Clock()
    leader = make_controller(api, source, leader_elect=True, lease_namespace="kube-system", identity="a")
    leader.elector._mono = mono  # type: ignore[union-attr]
    leader.sync()
    leader.elector.try_acquire_or_renew()  # type: ignore[union-attr]
    # the leader crashes here, before acting and without releasing

    standby = make_controller(api, source, leader_elect=True, lease_namespace="kube-system", identity="b")
    standby.elector._mono = mono  # type: ignore[union-attr]
    standby.sync()
    standby.elector.try_acquire_or_renew()  # type: ignore[union-attr]
    report = standby.reconciler.tick(time.time())
    assert report.skipped_not_leader
    assert not kube.calls("PUT", "/scale") and not kube.calls("PATCH", "modelscalingpolicies")
    assert standby.readyz() == (True, "ok: standing by")

    mono.t += 16
    standby.elector.try_acquire_or_renew()  # type: ignore[union-attr]
    assert standby.reconciler.tick(time.time()).writes == 1
    assert kube.calls("PUT", "/scale")


def test_informer_follows_watch_events_and_relists_after_410(kube, api):
    custom = client.CustomObjectsApi(api)
    inf = Informer(
        "policies",
        custom.list_cluster_custom_object,
        GROUP,
        "v1alpha1",
        "modelscalingpolicies",
        watch_timeout_seconds=2,
    )
    kube.put(GROUP, "modelscalingpolicies", policy("a"), kind="ModelScalingPolicy")
    inf.relist()
    assert [o["metadata"]["name"] for o in inf.items()] == ["a"]
    stop = threading.Event()
    inf.start(stop)
    try:
        kube.put(GROUP, "modelscalingpolicies", policy("b"), kind="ModelScalingPolicy")
        _wait(lambda: len(inf) == 2)
        kube.delete(GROUP, "modelscalingpolicies", "models", "a")
        _wait(lambda: [o["metadata"]["name"] for o in inf.items()] == ["b"])
    finally:
        stop.set()


def test_informer_relists_when_its_watch_version_was_compacted_away(kube, api):
    custom = client.CustomObjectsApi(api)
    inf = Informer(
        "policies",
        custom.list_cluster_custom_object,
        GROUP,
        "v1alpha1",
        "modelscalingpolicies",
        watch_timeout_seconds=2,
    )
    kube.put(GROUP, "modelscalingpolicies", policy("a"), kind="ModelScalingPolicy")
    inf.relist()
    old_version = inf.resource_version
    kube.put(GROUP, "modelscalingpolicies", policy("b"), kind="ModelScalingPolicy")
    kube.compact()  # history before now is gone: a watch from `old_version` gets 410
    assert inf.resource_version == old_version
    stop = threading.Event()
    inf.start(stop)
    try:
        _wait(lambda: inf.relists == 2 and len(inf) == 2)
        assert (
            "WATCH",
            "/apis/autoscaler.inference.dev/v1alpha1/modelscalingpolicies",
            f"resourceVersion={old_version}",
        ) in kube.calls("WATCH")
    finally:
        stop.set()


def _wait(cond: Callable[[], object], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_running_controller_serves_metrics_and_probes_and_stops_on_request(kube, api, source):
    import socket

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    add_deployment(kube, replicas=1)
    add_policy(kube)
    port = free_port()
    c = make_controller(
        api,
        source,
        metrics_port=port,
        health_port=port,
        leader_elect=True,
        lease_namespace="kube-system",
        retry_period_seconds=0.2,
        renew_deadline_seconds=1,
        lease_duration_seconds=2,
        loop_granularity_seconds=0.05,
    )
    t = threading.Thread(target=c.run, daemon=True)
    t.start()
    try:
        _wait(lambda: c.reconciler.runtimes and kube.calls("PUT", "/scale"))
        expected = ('inference_autoscaler_desired_replicas{namespace="models",policy="llama"}',
                    "inference_autoscaler_tick_duration_seconds_bucket", "inference_autoscaler_leader 1.0")
        bodies: list[str] = []

        def metrics_show_the_tick() -> bool:
            # The gauges are set after the scale write and the status patch: wait for them, not the PUT.
            bodies.append(urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode())
            return all(e in bodies[-1] for e in expected)

        try:
            _wait(metrics_show_the_tick, timeout=15.0)
        except AssertionError:
            missing = [e for e in expected if e not in bodies[-1]]
            raise AssertionError(f"/metrics never showed {missing}") from None
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz").read() == b"ok: leading\n"
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz").status == 200
    finally:
        c.stop()
        t.join(timeout=10)
    assert not t.is_alive()
    lease = kube.get("coordination.k8s.io", "leases", "kube-system", "inference-autoscaler")
    assert lease["spec"]["holderIdentity"] is None  # released on shutdown


def test_the_informers_cover_the_watched_namespaces_or_the_cluster() -> None:
    from kubernetes import client

    from autoscaler.controller.manager import autoscaler_informers, policy_informers

    api = client.ApiClient(client.Configuration())
    custom, hpa = client.CustomObjectsApi(api), client.AutoscalingV2Api(api)
    assert [i.name for i in policy_informers(custom, ())] == ["policies"]
    assert [i.name for i in policy_informers(custom, ("a", "b"))] == ["policies/a", "policies/b"]
    cluster = autoscaler_informers(hpa, custom, ())
    assert [i.name for i in cluster] == ["hpas", "scaledobjects"] and all(i.optional for i in cluster)
    assert [i.name for i in autoscaler_informers(hpa, custom, ("a", "b"))] == [
        "hpas/a", "scaledobjects/a", "hpas/b", "scaledobjects/b"]
