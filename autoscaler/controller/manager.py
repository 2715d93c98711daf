"""Wiring: informers, leader election, the tick loop, the HTTP endpoints and graceful shutdown."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from prometheus_client import CollectorRegistry

from autoscaler.controller.events import EventRecorder
from autoscaler.controller.informer import Informer, Obj
from autoscaler.controller.leader import LeaderConfig, LeaderElector
from autoscaler.controller.reconciler import Reconciler, TickReport
from autoscaler.controller.server import check_route, metrics_route, serve
from autoscaler.controller.targetcache import Kind, TargetCache, trim_deployment, trim_target
from autoscaler.controller.telemetry import ChainedRegistry, ControllerMetrics
from autoscaler.observe.pods import INTERESTING_EVENT_REASONS
from autoscaler.policy import API_GROUP, PLURAL, VERSION
from autoscaler.sources.base import MetricsSource
from autoscaler.targets.api import bound_retries, set_request_timeout
from autoscaler.targets.owners import trim_autoscaler
from autoscaler.targets.reads import DirectReads

log = logging.getLogger(__name__)


def default_identity() -> str:
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass
class ControllerConfig:
    namespaces: Sequence[str] = ()  # empty: all namespaces
    dry_run: bool = False
    leader_elect: bool = False
    lease_namespace: str = "default"
    lease_name: str = "inference-autoscaler"
    identity: str = ""
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    metrics_port: int | None = None
    health_port: int | None = None
    max_backoff_seconds: float = 300.0
    loop_granularity_seconds: float = 1.0
    workers: int = 16  # policies reconciled in parallel (API round trips dominate a tick)
    bind_address: str = "0.0.0.0"  # of the /metrics and probe servers (all IPv4 interfaces: the kubelet's probes)
    api_timeout_seconds: float = 10.0  # read timeout of every Kubernetes API call (connect: at most 5 s)
    phase_budget_seconds: float = 5.0  # a tick waits this long per phase for a slow policy, then moves on
    # /healthz fails when the loop has not completed a tick for this long, or for 3 policy intervals
    # (whichever is longer): a hung tick must get the pod restarted, not stay green.
    liveness_seconds: float = 60.0
    watch_other_autoscalers: bool = True  # read HPAs and KEDA ScaledObjects to avoid fighting them
    # Read targets from watch caches (one informer per kind in use) instead of a GET per policy per tick.
    cache_targets: bool = True
    # The core state in a policy's status is rewritten at least this often while nothing material changes
    # (changes that would alter a decision after a restart are written in the tick they happen).
    state_max_age_seconds: float = 300.0


def trim_pod(pod: Obj) -> Obj:
    """Only what cold-start observation, replica counting, GPU accounting and scraping read."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    return {
        "metadata": {
            k: meta.get(k)
            for k in (
                "name",
                "namespace",
                "uid",
                "labels",
                "annotations",
                "creationTimestamp",
                "deletionTimestamp",
                "resourceVersion",
            )
        },
        "spec": {
            "nodeName": spec.get("nodeName"),
            "nodeSelector": spec.get("nodeSelector"),
            "tolerations": spec.get("tolerations"),
            "containers": [
                {"name": c.get("name"), "image": c.get("image"), "resources": c.get("resources")}
                for c in spec.get("containers") or ()
            ],
        },
        "status": {
            k: status.get(k) for k in ("phase", "podIP", "conditions", "containerStatuses", "initContainerStatuses")
        },
    }


def keep_event(ev: Obj) -> Obj | None:
    if ev.get("reason") not in INTERESTING_EVENT_REASONS:
        return None
    return {
        k: ev.get(k)
        for k in (
            "metadata",
            "involvedObject",
            "reason",
            "message",
            "firstTimestamp",
            "lastTimestamp",
            "eventTime",
            "count",
        )
    }


def scopes(namespaces: Sequence[str]) -> list[str | None]:
    """What the controller lists in: each watched namespace, or None (the whole cluster) when none is named."""
    return [*namespaces] or [None]


def scoped(name: str, ns: str | None) -> str:
    """An informer's name in its scope: `name/ns`, or `name` over the cluster."""
    return f"{name}/{ns}" if ns else name


def typed_list(namespaced: Callable[..., Any], everywhere: Callable[..., Any], ns: str | None) -> tuple[Any, ...]:
    """A typed API's list call with its leading arguments: `namespaced` in `ns`, or `everywhere` over the
    cluster (e.g. `list_namespaced_deployment`, `list_deployment_for_all_namespaces`)."""
    return (namespaced, ns) if ns else (everywhere,)


def custom_list(custom: client.CustomObjectsApi, group: str, version: str, plural: str,
                ns: str | None) -> tuple[Any, ...]:
    """A custom resource's list call with its leading arguments, in `ns` or over the cluster."""
    if ns:
        return (custom.list_namespaced_custom_object, group, version, ns, plural)
    return (custom.list_cluster_custom_object, group, version, plural)


def policy_informers(custom: client.CustomObjectsApi, namespaces: Sequence[str]) -> list[Informer]:
    """The policies' informers: one per watched namespace, or one over the cluster when none is named."""
    return [Informer(scoped("policies", ns), *custom_list(custom, API_GROUP, VERSION, PLURAL, ns))
            for ns in scopes(namespaces)]


def autoscaler_informers(hpa: client.AutoscalingV2Api, custom: client.CustomObjectsApi,
                         namespaces: Sequence[str]) -> list[Informer]:
    """HorizontalPodAutoscalers and KEDA ScaledObjects (optional: a cluster without KEDA has none), per
    watched namespace or over the cluster: the other autoscalers a target may already have."""
    out: list[Informer] = []
    for ns in scopes(namespaces):
        hpa_list = typed_list(hpa.list_namespaced_horizontal_pod_autoscaler,
                              hpa.list_horizontal_pod_autoscaler_for_all_namespaces, ns)
        out.append(Informer(scoped("hpas", ns), *hpa_list, transform=trim_autoscaler, optional=True))
        keda_list = custom_list(custom, "keda.sh", "v1alpha1", "scaledobjects", ns)
        out.append(Informer(scoped("scaledobjects", ns), *keda_list, transform=trim_autoscaler, optional=True))
    return out


def cluster_informers(core: client.CoreV1Api) -> tuple[Informer, Informer, Informer]:
    """Pods (across all namespaces: GPU accounting on nodes needs every pod, not only the models'; finished
    ones left out), the pods' events (what the cold-start stages are learned from) and the nodes."""
    pods = Informer("pods", core.list_pod_for_all_namespaces, transform=trim_pod,
                    field_selector="status.phase!=Succeeded,status.phase!=Failed")
    events = Informer("events", core.list_event_for_all_namespaces, transform=keep_event,
                      field_selector="involvedObject.kind=Pod")
    return pods, events, Informer("nodes", core.list_node)


def leader_elector(api_client: client.ApiClient, config: ControllerConfig, identity: str) -> LeaderElector | None:
    """The lease this replica competes for (None: `leader_elect` off, this replica always acts)."""
    if not config.leader_elect:
        return None
    return LeaderElector(
        client.CoordinationV1Api(api_client),
        LeaderConfig(config.lease_namespace, config.lease_name, identity, config.lease_duration_seconds,
                     config.renew_deadline_seconds, config.retry_period_seconds),
    )


class Controller:
    def __init__(
        self,
        api_client: client.ApiClient,
        source: MetricsSource,
        config: ControllerConfig,
        *,
        clock: Callable[[], float] = time.time,
        extra_registries: Sequence[CollectorRegistry] = (),
    ):
        self.config = config
        self.clock = clock
        self.identity = config.identity or default_identity()
        custom, core = client.CustomObjectsApi(api_client), client.CoreV1Api(api_client)
        self.policy_informers = policy_informers(custom, config.namespaces)
        self.pods, self.events, self.nodes = cluster_informers(core)
        self.autoscalers = (autoscaler_informers(client.AutoscalingV2Api(api_client), custom, config.namespaces)
                            if config.watch_other_autoscalers else [])
        set_request_timeout(min(5.0, config.api_timeout_seconds), config.api_timeout_seconds)
        bound_retries(api_client)
        self.metrics = ControllerMetrics()
        self.elector = leader_elector(api_client, config, self.identity)
        self.recorder = EventRecorder(core, self.identity, clock)
        self.source = source
        self._apps, self._custom = client.AppsV1Api(api_client), custom
        direct = DirectReads(self._apps, custom)
        self.target_cache = TargetCache(direct, self._target_informers) if config.cache_targets else None
        self.reconciler = Reconciler(
            api_client,
            self.source,
            list_policies=self._policies,
            list_pods=self.pods.items,
            list_events=self.events.items,
            list_nodes=self.nodes.items,
            recorder=self.recorder,
            metrics=self.metrics,
            dry_run=config.dry_run,
            is_leader=self.is_leader,
            max_backoff_seconds=config.max_backoff_seconds,
            workers=config.workers,
            list_autoscalers=self._other_autoscalers,
            phase_budget_seconds=config.phase_budget_seconds,
            reads=self.target_cache or direct,
            state_max_age_seconds=config.state_max_age_seconds,
        )
        self.pods.on_change = lambda _kind, pod: self.reconciler.observer.note_pod(pod)
        self.registry = ChainedRegistry([self.metrics.registry, *extra_registries])
        self.stop_event = threading.Event()
        self._servers: list[Any] = []
        self.ticks = 0
        self.last_loop = clock()  # when the loop last completed an iteration (a tick, or a wait for one)

    @property
    def informers(self) -> list[Informer]:
        return [*self.policy_informers, self.pods, self.events, self.nodes, *self.autoscalers]

    def _target_informers(self, kind: Kind) -> list[tuple[str | None, Informer]]:
        """Informers for one target kind: per watched namespace, or one for all namespaces. Optional: a kind
        we may not list (RBAC) or that is not served is read with a GET per read instead."""
        group, version, plural = kind
        deployments = group == "apps" and plural == "deployments"
        out: list[tuple[str | None, Informer]] = []
        for ns in scopes(self.config.namespaces):
            args = (typed_list(self._apps.list_namespaced_deployment, self._apps.list_deployment_for_all_namespaces, ns)
                    if deployments else custom_list(self._custom, group, version, plural, ns))
            out.append((ns, Informer(scoped(f"targets/{plural}.{group}", ns), *args,
                                     transform=trim_deployment if deployments else trim_target, optional=True)))
        return out

    def _other_autoscalers(self) -> list[Obj]:
        out: list[Obj] = []
        for inf in self.autoscalers:
            out.extend(inf.items())
        return out

    def _policies(self) -> list[Obj]:
        out: list[Obj] = []
        for inf in self.policy_informers:
            out.extend(inf.items())
        return out

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def pod_addresses(self, key: str) -> list[str]:
        """Ready pod IPs of a policy's target as of the last tick (for the direct-scrape source)."""
        rt = self.reconciler.runtimes.get(key)
        return list(rt.pod_addresses) if rt else []

    # -- health ------------------------------------------------------------------------------------
    def liveness_limit(self) -> float:
        intervals = [rt.policy.spec.interval_seconds for rt in self.reconciler.runtimes.values() if rt.policy]
        return max(self.config.liveness_seconds, 3 * max(intervals, default=0.0))

    def healthz(self) -> tuple[bool, str]:
        age = self.clock() - self.last_loop
        limit = self.liveness_limit()
        if age > limit:
            return False, f"no tick completed for {age:.0f}s (limit {limit:.0f}s): the control loop is stuck"
        return True, "ok"

    def readyz(self) -> tuple[bool, str]:
        unsynced = [i.name for i in self.informers if not i.synced.is_set()]
        if unsynced:
            return False, f"informers not synced: {', '.join(unsynced)}"
        if self.elector is not None:
            if self.elector.is_leader():
                return True, "ok: leading"
            if not self.elector.standby_healthy:
                return False, "standby cannot read the leader lease"
            return True, "ok: standing by"
        return True, "ok"

    # -- running -----------------------------------------------------------------------------------
    def start_servers(self) -> None:
        c = self.config
        if c.metrics_port is not None and c.metrics_port == c.health_port:
            self._servers.append(
                serve(
                    c.metrics_port,
                    {
                        "/metrics": metrics_route(self.registry),
                        "/healthz": check_route(self.healthz),
                        "/readyz": check_route(self.readyz),
                    },
                    host=c.bind_address,
                )
            )
            return
        if c.metrics_port is not None:
            self._servers.append(serve(c.metrics_port, {"/metrics": metrics_route(self.registry)}, host=c.bind_address))
        if c.health_port is not None:
            self._servers.append(
                serve(
                    c.health_port,
                    {"/healthz": check_route(self.healthz), "/readyz": check_route(self.readyz)},
                    host=c.bind_address,
                )
            )

    def sync(self) -> None:
        """List everything once (the informers' initial sync)."""
        for inf in self.informers:
            inf.relist()
        for inf in self.target_cache.informers if self.target_cache is not None else ():
            try:
                inf.relist()
            except Exception as e:  # the target cache falls back to GETs; it never blocks a tick
                log.warning("cannot list %s: %s", inf.name, e)

    def start_watches(self, stop: threading.Event) -> None:
        """Keep every cache current until `stop` (the informers the readiness gate waits for, and the
        target caches, including those made later)."""
        for inf in self.informers:
            inf.start(stop)
        if self.target_cache is not None:
            self.target_cache.start(stop)

    def run_once(self) -> TickReport:
        """Sync, take the lease if configured (once), run one tick. For tests and cron-style runs."""
        self.sync()
        if self.elector is not None:
            self.elector.try_acquire_or_renew()
        self.metrics.leader.set(1 if self.is_leader() else 0)
        report = self.reconciler.tick(self.clock())
        self.ticks += 1
        self.last_loop = self.clock()
        if self.elector is not None:
            self.elector.release()
        return report

    def run(self) -> None:
        """Until `stop_event` (set by SIGTERM/SIGINT in the CLI): watch, elect, tick when policies are due."""
        stop = self.stop_event
        self.start_servers()
        try:
            self.sync()
        except Exception as e:
            log.warning("initial list failed (%s); the informers will retry", e)
        self.start_watches(stop)
        elector_thread = self.elector.start(stop) if self.elector is not None else None
        log.info(
            "controller started",
            extra={
                "identity": self.identity,
                "dryRun": self.config.dry_run,
                "namespaces": list(self.config.namespaces) or "all",
            },
        )
        while not stop.is_set():
            leading = self.is_leader()
            self.metrics.leader.set(1 if leading else 0)
            if leading and all(i.synced.is_set() for i in self.informers):
                try:
                    report = self.reconciler.tick(self.clock())
                    self.ticks += 1
                    if report.due:
                        log.info("tick", extra=report.log_fields())
                except Exception:  # a bug in one tick must not kill the controller
                    log.exception("tick failed")
                    stop.wait(self.config.loop_granularity_seconds)  # never a busy retry loop
            self.last_loop = self.clock()
            nxt = self.reconciler.next_due()
            wait = self.config.loop_granularity_seconds
            if nxt is not None:
                wait = min(wait, max(0.05, nxt - self.clock()))
            stop.wait(wait)
        if elector_thread is not None:
            elector_thread.join(timeout=self.config.retry_period_seconds + 5)  # it releases the lease
        for s in self._servers:
            s.shutdown()
        log.info("controller stopped")

    def stop(self) -> None:
        self.stop_event.set()
