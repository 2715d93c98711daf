"""One reconcile tick over every due policy.

Per tick: parse the due policies (an invalid spec becomes a status condition, never an exception), read
each target's scale from the target watch caches (a GET only when a cache cannot answer) and pick its
pods out of the pod cache, call the metric source once for all of them, then per policy call the pure
`decide` and write the target (conditional on the resourceVersion decided on; after a 409 the target is
read afresh, and a replica count someone else changed is left for the next tick to decide on), and after
every write of the tick merge-patch the statuses that need it: when the decision, a condition, a learned
sample or the part of the core state a restart needs changed, else when the stored state reaches
`state_max_age_seconds` (a quiet tick makes no API call). An API error backs that policy off
exponentially and keeps its last good state; other policies are unaffected.

Isolation: whatever one policy does (a spec that crashes a stage with any exception, a target read that
hangs, a corrupt stored state), it is contained to that policy: a condition, an event, its own error
counter and exponential backoff. The other policies are reconciled on time: the tick waits for each phase
at most `phase_budget_seconds`; a policy still in flight after that is left to finish on its own and is
not dispatched again until it has.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, replace
from typing import Any

from kubernetes import client

from autoscaler.controller.backoff import backoff_seconds
from autoscaler.controller.conditions import (
    SCALING_ACTIVE,
    SLO_INFEASIBLE,
    TARGET_FOUND,
    get_condition,
)
from autoscaler.controller.deletion_cost import DeletionCoster
from autoscaler.controller.drain import DrainWatch
from autoscaler.controller.events import EventRecorder
from autoscaler.controller.podindex import LabelPodIndex
from autoscaler.controller.runtime import Obj, PolicyRuntime, policy_key
from autoscaler.controller.status import (
    decision_conditions,
    decision_status,
    learned_status,
    slo_infeasible_event,
    state_fingerprint,
    status_fingerprint,
)
from autoscaler.controller.status_writer import StatusWriter
from autoscaler.controller.telemetry import ControllerMetrics
from autoscaler.controller.warmpool import WarmPool, WarmStatus
from autoscaler.core import CoreState, Decision, DecisionResult, Signals, decide, forecast_config
from autoscaler.core.signals import ClusterFacts, ReplicaCounts
from autoscaler.observe import ColdStartObserver, PodIndex, cluster_facts, gpu_usage_by_node, replica_counts
from autoscaler.observe.coldstart import events_by_pod_uid, node_creation_times, node_ready_times
from autoscaler.observe.pods import is_ready
from autoscaler.observe.warm import WarmNodes, running_placeholders, warm_label_value
from autoscaler.policy import API_VERSION, ModelScalingPolicy
from autoscaler.policy_loader import PolicyError, parse_policy
from autoscaler.sources.base import MetricsSource
from autoscaler.targets import ScaleReading, ScaleTarget, TargetBlocked, TargetNotFound
from autoscaler.targets.api import API_ERRORS, ApiException, describe_error, error_code
from autoscaler.targets.owners import (
    Claim,
    OtherAutoscaler,
    TargetKey,
    find_conflict,
    other_autoscalers,
    owners,
    target_keys,
)
from autoscaler.targets.reads import DirectReads, Reads
from autoscaler.targets.resolve import PluralResolver, TargetApis, resolve_target

log = logging.getLogger(__name__)
MAX_CONFLICT_RETRIES = 3
WARM_ERRORS: tuple[type[BaseException], ...] = (*API_ERRORS, ValueError)


class Superseded(Exception):
    """The target's replica count changed between our read and our write (a 409, then a fresh read)."""


@dataclass
class _Prepared:
    policy: ModelScalingPolicy
    raw: Obj
    rt: PolicyRuntime
    target: ScaleTarget
    reading: ScaleReading
    pods: list[Mapping[str, Any]]
    # (decision, dry run, applied, ready, starting) once decided: recorded after every write of the tick
    decided: tuple[Decision, bool, bool, int, int] | None = None
    warm: WarmStatus | None = None  # the warm pool after this tick (spec.warmCapacity)
    deletion_cost: Obj | None = None  # status.deletionCost from this decision, None: leave it as it is


@dataclass(frozen=True)
class _Cluster:
    """The cluster as the tick found it, read once and shared by every policy decided in it."""
    pods: Sequence[Obj]
    index: PodIndex
    nodes: list[Obj]
    events: dict[str, list[Any]]  # by pod UID
    gpus_used: dict[str, int]  # by node
    node_created: dict[str, float]
    node_ready: dict[str, float]
    owner_of: Mapping[TargetKey, Claim]  # which policy claims each target
    autoscalers: Mapping[TargetKey, OtherAutoscaler]  # HPAs, KEDA ScaledObjects and the like, by target


@dataclass(frozen=True)
class _Collected:
    """The metric source's answer for the tick's policies."""
    signals: dict[str, Signals]
    refused: dict[str, str]  # the source's reason per policy it had no metrics for
    error: str | None = None  # the whole source failed

    def of(self, p: _Prepared) -> Signals:
        return self.signals.get(p.policy.key, Signals())

    def why_missing(self, p: _Prepared) -> str | None:
        """The source's own reason this policy has no metrics (whole source down, or this policy refused)."""
        return self.error or self.refused.get(p.policy.key)


@dataclass
class TickReport:
    due: int = 0
    reconciled: int = 0
    invalid: int = 0
    writes: int = 0
    errors: int = 0
    skipped_not_leader: bool = False
    seconds: float = 0.0

    def log_fields(self) -> dict[str, Any]:
        """The tick's counts as a log record's `extra` (the controller's loop and `run --once` log the same)."""
        return {"due": self.due, "reconciled": self.reconciled, "writes": self.writes, "errors": self.errors,
                "invalid": self.invalid, "notLeader": self.skipped_not_leader, "seconds": round(self.seconds, 3)}


class Reconciler:
    def __init__(
        self,
        api_client: client.ApiClient,
        source: MetricsSource,
        *,
        list_policies: Callable[[], Sequence[Obj]],
        list_pods: Callable[[], Sequence[Obj]],
        list_events: Callable[[], Sequence[Obj]],
        list_nodes: Callable[[], Sequence[Obj]],
        recorder: EventRecorder,
        metrics: ControllerMetrics,
        dry_run: bool = False,
        is_leader: Callable[[], bool] = lambda: True,
        max_backoff_seconds: float = 300.0,
        workers: int = 16,
        list_autoscalers: Callable[[], Sequence[Obj]] = list,
        phase_budget_seconds: float = 5.0,
        reads: Reads | None = None,
        state_max_age_seconds: float = 300.0,
    ):
        self.apis = TargetApis(client.AppsV1Api(api_client), client.CustomObjectsApi(api_client), api_client)
        self.reads: Reads = reads if reads is not None else DirectReads(self.apis.apps, self.apis.custom)
        self.status_writer = StatusWriter(self.apis.custom, metrics, state_max_age_seconds)
        self.plurals = PluralResolver(api_client)
        self.source = source
        self.list_policies, self.list_pods = list_policies, list_pods
        self.list_events, self.list_nodes = list_events, list_nodes
        self.list_autoscalers = list_autoscalers
        self.phase_budget_seconds = phase_budget_seconds
        self.recorder, self.metrics = recorder, metrics
        self.dry_run = dry_run
        self.is_leader = is_leader
        self.max_backoff_seconds = max_backoff_seconds
        self.observer = ColdStartObserver()
        self.drain = DrainWatch()  # replicas on cordoned/tainted nodes: the surge's input, status.drain, events
        self.deletion_cost = DeletionCoster(api_client, source, metrics.registry)
        self.runtimes: dict[str, PolicyRuntime] = {}
        self._facts_memo: tuple[list[Obj], dict[tuple[Any, ...], ClusterFacts]] | None = None  # this tick's
        # Warm capacity (autoscaler/controller/warmpool.py): placeholder Deployments, the nodes placeholders
        # held, and this tick's running placeholders per (namespace, policy).
        self.warm = WarmPool(self.apis.apps)
        self.warm_nodes = WarmNodes()
        self._warm_running: dict[tuple[str, str], int] = {}
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="reconcile")

    # -- the tick ----------------------------------------------------------------------------------
    def next_due(self) -> float | None:
        return min((rt.next_due for rt in self.runtimes.values()), default=None)

    def tick(self, now: float) -> TickReport:
        started = time.perf_counter()
        report = TickReport()
        if not self.is_leader():
            report.skipped_not_leader = True
            return report
        raws = {policy_key(r): r for r in self.list_policies()}
        for gone in [k for k in self.runtimes if k not in raws]:
            del self.runtimes[gone]
            self.drain.forget(gone)
            ns, _, name = gone.partition("/")
            self.metrics.forget(ns, name)
        for key in raws:
            self.runtimes.setdefault(key, PolicyRuntime())
        due = [
            (raws[k], self.runtimes[k])
            for k in raws
            if (self.runtimes[k].next_due <= now or self.runtimes[k].parsed_for != self._version(raws[k]))
            and not self._busy(self.runtimes[k])
        ]
        report.due = len(due)
        valid: list[tuple[ModelScalingPolicy, Obj, PolicyRuntime]] = []
        for raw, rt in due:
            policy = self._parse(raw, rt, now)
            if policy is None:
                if rt.invalid is not None:
                    report.invalid += 1
                    self._guarded(raw, rt, now, "report invalid spec", self._invalid, raw, rt, now)
                else:
                    report.errors += 1
            else:
                valid.append((policy, raw, rt))
        self.metrics.invalid_policies.set(sum(1 for rt in self.runtimes.values() if rt.invalid))
        try:
            if valid:
                self._reconcile(valid, raws, now, report)
        finally:
            for _raw, rt in due:  # whatever happened, no due policy is retried before its next slot
                if rt.next_due <= now and not self._busy(rt):
                    rt.next_due = now + self._interval(rt)
        report.seconds = time.perf_counter() - started
        self.metrics.tick_seconds.observe(report.seconds)
        self.metrics.tick_policies.set(report.reconciled)
        return report

    def _reconcile(
        self,
        valid: list[tuple[ModelScalingPolicy, Obj, PolicyRuntime]],
        raws: dict[str, Obj],
        now: float,
        report: TickReport,
    ) -> None:
        """Read every target, collect the metrics, decide and write, then record: each phase runs for many
        policies at once (API round trips dominate a tick; each policy's own steps stay in order, and policies
        share nothing but thread-safe caches and counters)."""
        cluster = self._cluster(raws, now)

        def read(v: tuple[ModelScalingPolicy, Obj, PolicyRuntime]) -> _Prepared | None:
            policy, raw, rt = v
            return self._guarded(raw, rt, now, "read target", self._read_target, policy, raw, rt, cluster, now)

        reads = self._run_phase(read, valid, [rt for _, _, rt in valid])
        prepared = [p for p in reads if p is not None]
        report.errors += sum(1 for (_, _, rt), p in zip(valid, reads, strict=True) if p is None and rt.failures)
        collected = self._collect(prepared, now)

        def act(p: _Prepared) -> bool | None:
            if not self.is_leader():  # lost the lease mid-tick: stop acting at once
                return None
            return self._guarded(p.raw, p.rt, now, "decide", self._act, p, collected.of(p), cluster, now,
                                 collected.why_missing(p))

        acted = self._run_phase(act, prepared, [p.rt for p in prepared])

        # Status, events and metrics after every write of the tick: a burst's scale writes do not queue
        # behind the status patches and events of the policies decided before them.
        def record(p: _Prepared) -> None:
            if p.decided is None or not self.is_leader():
                return None
            return self._guarded(p.raw, p.rt, now, "record", self._record_decision, p, *p.decided, now,
                                 collected.why_missing(p))

        recorded = [p for p, wrote in zip(prepared, acted, strict=True) if wrote is not None]
        self._run_phase(record, recorded, [p.rt for p in recorded])
        self._count(prepared, acted, report)
        # A policy still in flight past its phase budget may be observing pods right now: forget the pods
        # that are gone only when no policy is (the observer's bookkeeping is not safe against that).
        if not any(self._busy(rt) for rt in self.runtimes.values()):
            self.observer.forget_except({(pod.get("metadata") or {}).get("uid", "") for pod in cluster.pods})

    def _cluster(self, raws: dict[str, Obj], now: float) -> _Cluster:
        """One read of the pods, nodes, events and other autoscalers for the whole tick."""
        pods = self.list_pods()
        nodes = list(self.list_nodes())
        self.warm_nodes.see(pods, now)
        self._warm_running = running_placeholders(pods)
        return _Cluster(pods, LabelPodIndex(pods), nodes, events_by_pod_uid(self.list_events()),
                        gpu_usage_by_node(pods), node_creation_times(nodes), node_ready_times(nodes),
                        owners(self._claims(raws)), self._autoscalers())

    def _collect(self, prepared: list[_Prepared], now: float) -> _Collected:
        """The metric source's signals for the policies whose targets were read. A broken source does not
        stop the decisions: its error is every policy's reason for missing metrics, and they hold."""
        if not prepared:
            return _Collected({}, {})
        try:
            signals = self.source.collect([p.policy for p in prepared], now)
            return _Collected(signals, dict(getattr(self.source, "policy_errors", None) or {}))
        except Exception as e:
            error = f"metric source failed: {type(e).__name__}: {e}"
            self.metrics.source_errors.inc()
            log.warning(error)
            return _Collected({}, {}, error)

    def _count(self, prepared: list[_Prepared], acted: list[bool | None], report: TickReport) -> None:
        """The tick's writes, errors and reconciled policies (None: no result, from a lost lease or a failure)."""
        for p, wrote in zip(prepared, acted, strict=True):
            if wrote is None:
                if not self.is_leader():
                    report.skipped_not_leader = True
                else:
                    report.errors += 1
                continue
            report.writes += 1 if wrote else 0
            report.errors += 1 if p.rt.failures else 0
            report.reconciled += 1

    def _run_phase(self, fn: Callable[[Any], Any], items: Sequence[Any], rts: Sequence[PolicyRuntime]) -> list[Any]:
        """Run `fn` over `items` in the pool; wait at most the phase budget. A straggler (an API call that
        hangs until its timeout) keeps running on its own, marked in flight, and counts as no result now."""
        futures = [self._pool.submit(fn, item) for item in items]
        done, _ = wait_futures(futures, timeout=self.phase_budget_seconds)
        out: list[Any] = []
        for fut, rt in zip(futures, rts, strict=True):
            if fut in done:
                out.append(fut.result())  # never raises: `fn` is guarded
            else:
                rt.inflight = fut
                self.metrics.slow_policies.inc()
                out.append(None)
        return out

    @staticmethod
    def _busy(rt: PolicyRuntime) -> bool:
        if rt.inflight is not None and rt.inflight.done():
            rt.inflight = None
        return rt.inflight is not None

    @staticmethod
    def _interval(rt: PolicyRuntime) -> float:
        return rt.policy.spec.interval_seconds if rt.policy is not None else 60.0

    def _guarded(self, raw: Obj, rt: PolicyRuntime, now: float, stage: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run one policy's step; any exception is that policy's failure (condition, event, counter, backoff)."""
        try:
            return fn(*args)
        except Exception as e:
            self._policy_failure(raw, rt, now, stage, e)
            return None

    def _claims(self, raws: Mapping[str, Obj]) -> list[Claim]:
        out = []
        for key, rt in self.runtimes.items():
            raw = raws.get(key)
            if rt.policy is None or raw is None:
                continue
            meta = raw.get("metadata") or {}
            created = str(meta.get("creationTimestamp") or "")
            out.append(Claim(key, created, target_keys(rt.policy.spec.target_ref, rt.policy.metadata.namespace)))
        return out

    def _autoscalers(self) -> dict[TargetKey, OtherAutoscaler]:
        try:
            return other_autoscalers(self.list_autoscalers())
        except Exception as e:  # an unreadable HPA must not stop the tick; the write path stays conditional
            log.warning("could not read other autoscalers: %s", e)
            return {}

    # -- steps -------------------------------------------------------------------------------------
    @staticmethod
    def _version(raw: Obj) -> tuple[Any, Any]:
        """Identifies one spec: a new object (uid) or an edited spec (generation) is parsed again."""
        meta = raw.get("metadata") or {}
        return meta.get("uid"), meta.get("generation") or meta.get("resourceVersion")

    def _parse(self, raw: Obj, rt: PolicyRuntime, now: float) -> ModelScalingPolicy | None:
        version = self._version(raw)
        if rt.parsed_for != version:
            doc = {k: v for k, v in raw.items() if k != "status"}
            doc.setdefault("apiVersion", API_VERSION)
            doc.setdefault("kind", "ModelScalingPolicy")
            try:
                rt.policy, rt.invalid = parse_policy(doc, source=policy_key(raw)), None
                rt.target = None
                rt.forecast_cfg = forecast_config(rt.policy.spec)
            except PolicyError as e:
                rt.policy, rt.invalid = (
                    None,
                    "; ".join(f"{p.path}: {p.message}" if p.path else p.message for p in e.problems),
                )
            except Exception as e:
                rt.policy, rt.invalid = None, f"the spec cannot be used: {type(e).__name__}: {str(e)[:300]}"
                self._count_error(raw, "parse", e)
            rt.parsed_for = version
        if rt.policy is not None and rt.state is None:
            self._guarded(raw, rt, now, "restore state", self._restore, raw, rt)
        return rt.policy

    def _restore(self, raw: Obj, rt: PolicyRuntime) -> None:
        """After a restart, continue from the state persisted in status (a restart loses nothing)."""
        status = raw.get("status") or {}
        if not isinstance(status, dict):
            return
        saved = status.get("coreState")
        if isinstance(saved, dict):
            try:
                rt.state, rt.restored = CoreState.from_dict(saved), True
                # What is stored counts as written: an unchanged decision after a restart writes nothing.
                rt.fingerprint = status_fingerprint(status) + state_fingerprint(rt.state)
                last = saved.get("lastTick")
                if isinstance(last, (int, float)):
                    rt.persist_due = self.status_writer.next_persist(policy_key(raw), float(last))
            except Exception as e:
                self._discard_state(raw, rt, e)
        try:
            self.observer.restore_watermark(policy_key(raw), status.get("coldStartWatermark"))
        except Exception as e:
            log.warning("ignoring the stored coldStartWatermark of %s: %s", policy_key(raw), e)

    def _discard_state(self, raw: Obj, rt: PolicyRuntime, err: BaseException) -> None:
        """A stored state that cannot be read or used is dropped (the policy starts fresh), with a warning."""
        rt.state, rt.restored = None, False
        rt.fingerprint = rt.persist_due = None
        msg = (
            f"the stored status.coreState is unusable ({type(err).__name__}: {str(err)[:200]}); it was discarded "
            "and the policy starts from its priors"
        )
        log.warning(msg, extra={"policy": policy_key(raw)})
        self.metrics.state_discarded.inc()
        self.recorder.record(raw, "Warning", "StateDiscarded", msg)

    def _invalid(self, raw: Obj, rt: PolicyRuntime, now: float) -> None:
        msg = f"invalid spec: {rt.invalid}"
        self.status_writer.not_ready(raw, rt, now, "InvalidSpec", msg, (SCALING_ACTIVE, False, "InvalidSpec",
                                     "the spec does not validate; nothing is scaled until it is fixed"), observed=True)
        self.recorder.record(raw, "Warning", "InvalidSpec", msg)
        rt.next_due = now + 60.0  # a spec change (new generation) is picked up at once anyway

    def _read_target(
        self,
        policy: ModelScalingPolicy,
        raw: Obj,
        rt: PolicyRuntime,
        cluster: _Cluster,
        now: float,
    ) -> _Prepared | None:
        ns = policy.metadata.namespace  # a target is only ever looked up in the policy's own namespace
        spec = policy.spec
        try:
            target = rt.target
            if target is None:
                target = rt.target = resolve_target(self.apis, self.plurals, spec.target_ref, ns, self.reads)
            reading = target.read()
        except TargetNotFound as e:
            self._problem(raw, rt, now, spec.interval_seconds, found=False, reason="TargetNotFound", message=str(e))
            return None
        except TargetBlocked as e:
            self._problem(raw, rt, now, spec.interval_seconds, found=True, reason=e.reason, message=e.message)
            return None
        except API_ERRORS as e:
            self._api_failure(raw, rt, now, spec.interval_seconds, "read target", e)
            return None
        claim = Claim(policy.key, "", target_keys(spec.target_ref, ns))
        conflict = find_conflict(claim, cluster.owner_of, cluster.autoscalers)
        if conflict is not None and reading.blocked is None:
            reading = replace(reading, blocked=TargetBlocked(*conflict))
        pods = cluster.index.select(ns, reading.selector)
        rt.pod_addresses = [ip for p in pods if is_ready(p) and (ip := (p.get("status") or {}).get("podIP"))]
        return _Prepared(policy, raw, rt, target, reading, pods)

    def _act(
        self,
        p: _Prepared,
        signals: Signals,
        cluster: _Cluster,
        now: float,
        source_error: str | None,
    ) -> bool:
        policy, rt, reading = p.policy, p.rt, p.reading
        spec = policy.spec
        warm_key = (policy.metadata.namespace, warm_label_value(policy.metadata.name))
        sig, counts = self._signals(p, signals, cluster, warm_key, now)
        prev_state, result = self._decide(p, sig, now)
        d = result.decision
        dry = self.dry_run or spec.dry_run
        blocked = reading.blocked
        wants_change = d.desired_replicas is not None and d.desired_replicas != reading.replicas
        applied = False
        writing = wants_change and not dry and blocked is None
        p.deletion_cost = self.deletion_cost.before_write(  # before lowering replicas: which pods should go
            policy, p.target, p.pods, reading.replicas, d.desired_replicas, d.metrics_fresh,
            writing and self.is_leader(), now,
        )
        if writing:
            assert d.desired_replicas is not None
            if not self.is_leader():
                return False  # not ours to act on any more; the state is not committed either
            try:
                applied = self._write(p.target, reading, d.desired_replicas)
            except Superseded:
                # Someone else set another replica count after we read it: nothing was written, and what was
                # decided is not remembered (as after a failed write); the next tick decides from the new count.
                rt.state = replace(prev_state, coldstart=result.state.coldstart)
                rt.failures = 0
                rt.next_due = now + spec.interval_seconds
                p.decided = (d, dry, False, counts.ready, len(counts.starting))
                return False
            except API_ERRORS as e:
                # Keep the last good state (what was decided was not applied), but keep what was observed.
                rt.state = replace(prev_state, coldstart=result.state.coldstart)
                self._api_failure(
                    p.raw,
                    rt,
                    now,
                    spec.interval_seconds,
                    "write target",
                    e,
                    event=(
                        "ScaleFailed",
                        f"could not scale {p.target.description} to {d.desired_replicas}: {describe_error(e)}",
                    ),
                )
                return False
        rt.state = result.state
        rt.failures = 0
        rt.next_due = now + spec.interval_seconds
        p.decided = (d, dry, applied, counts.ready, len(counts.starting))
        p.warm = self._sync_warm(p, d, dry or blocked is not None, self._warm_running.get(warm_key, 0), now)
        return applied

    def _signals(self, p: _Prepared, signals: Signals, cluster: _Cluster, warm_key: tuple[str, str],
                 now: float) -> tuple[Signals, ReplicaCounts]:
        """The source's signals for the policy with what the cluster says beside them: the target's replica
        counts (its pods, those leaving drained nodes; returned beside the signals too), the cold-start stages
        observed on its pods, events and nodes, and the cluster's facts (GPUs free, warm placeholders running)."""
        spec, key = p.policy.spec, p.policy.key
        counts = replica_counts(p.reading.replicas, p.pods, now)
        counts = replace(counts, leaving=self.drain.leaving(key, p.pods, cluster.nodes))
        observations = self.observer.observe(key, p.pods, cluster.events, cluster.node_created,
                                             self.warm_nodes.nodes(*warm_key), 2 * spec.interval_seconds,
                                             cluster.node_ready)
        facts = self._facts(p.pods[0] if p.pods else None, cluster.nodes, cluster.gpus_used,
                            spec.model.gpus_per_replica)
        if spec.warm_capacity.enabled:
            facts = replace(facts, warm_slots=self._warm_running.get(warm_key, 0))
        return replace(signals, replicas=counts, cluster=facts, observations=observations), counts

    def _decide(self, p: _Prepared, sig: Signals, now: float) -> tuple[CoreState, DecisionResult]:
        """(the state decided from, the decision and its next state). A state restored from the status that
        breaks the decision is dropped, and the decision is made from the priors instead."""
        rt = p.rt
        prev_state = rt.state or CoreState()
        try:
            result = decide(p.policy.spec, sig, prev_state, now, rt.forecast_cfg)
        except Exception as e:
            if not rt.restored:
                raise
            self._discard_state(p.raw, rt, e)
            prev_state = CoreState()
            result = decide(p.policy.spec, sig, prev_state, now, rt.forecast_cfg)
        rt.restored = False
        return prev_state, result

    def _sync_warm(self, p: _Prepared, d: Decision, dry: bool, running: int, now: float) -> WarmStatus | None:
        """Keep the policy's placeholder Deployment as decided. A failure is the policy's own: counted, logged,
        an event and the status say so; the decision and the other policies go on."""
        spec, ref = p.policy.spec, p.policy.spec.target_ref
        if d.desired_replicas is None or (not spec.warm_capacity.enabled and not running):
            return None
        kind = "Deployment" if ref.kind == "Deployment" and ref.api_version == "apps/v1" else ref.kind
        uid = str((p.raw.get("metadata") or {}).get("uid") or "")
        try:
            return self.warm.sync(p.policy, uid, kind, ref.name, p.reading.resource_version, p.pods,
                                  d.warm_slots, running, dry, now)
        except WARM_ERRORS as e:
            self.metrics.api_errors.labels(operation="warm pool", code=error_code(e)).inc()
            msg = f"warm capacity: could not keep {d.warm_slots} placeholder(s): {describe_error(e)[:300]}"
            log.warning(msg, extra={"policy": p.policy.key})
            self.recorder.record(p.raw, "Warning", "WarmCapacityFailed", msg)
            return WarmStatus(d.warm_slots, running, msg)

    def _facts(
        self, template: Mapping[str, Any] | None, nodes: list[Obj], gpus_used: dict[str, int], gpus: int
    ) -> ClusterFacts:
        """`cluster_facts` depends on the nodes and GPU use (fixed within a tick) and on a pod's nodeSelector,
        tolerations and image: policies whose pods agree on those share one evaluation per tick (it walks
        every node, which was most of a quiet tick's CPU)."""
        if template is None:
            return ClusterFacts()
        spec = template.get("spec") or {}
        containers = spec.get("containers") or ()
        key = (
            repr(spec.get("nodeSelector")),
            repr(spec.get("tolerations")),
            containers[0].get("image") if containers else None,
            gpus,
        )
        memo = self._facts_memo
        if memo is None or memo[0] is not nodes:
            memo = self._facts_memo = (nodes, {})
        facts = memo[1].get(key)
        if facts is None:
            facts = memo[1][key] = cluster_facts(template, nodes, gpus_used, gpus)
        return facts

    def _write(self, target: ScaleTarget, reading: ScaleReading, replicas: int) -> bool:
        """Conditional write; on 409 re-read and retry on the fresh state (bounded)."""
        for attempt in range(MAX_CONFLICT_RETRIES + 1):
            try:
                target.write(replicas, reading)
                return True
            except ApiException as e:
                if e.status != 409 or attempt == MAX_CONFLICT_RETRIES:
                    raise
                self.metrics.api_errors.labels(operation="write target", code="409").inc()
                decided_on = reading.replicas
                reading = target.read(fresh=True)  # the cached copy is stale: ask the API server
                if reading.blocked is not None:
                    raise
                if reading.replicas == replicas:
                    return False  # someone already set what we wanted
                if reading.replicas != decided_on:
                    # Someone else changed the replica count: never overwrite it blindly; the next tick
                    # decides again from what is there now.
                    log.info("%s changed replicas meanwhile; deciding again next tick", target.description)
                    raise Superseded() from None
        return False

    # -- status, events, metrics -------------------------------------------------------------------
    def _problem(
        self,
        raw: Obj,
        rt: PolicyRuntime,
        now: float,
        interval: float,
        *,
        found: bool,
        reason: str,
        message: str,
    ) -> None:
        """The target is missing, or exists but must not be written by us: say so, keep the state."""
        found_cond = (TARGET_FOUND, found, "TargetFound" if found else reason, "target found" if found else message)
        self.status_writer.not_ready(raw, rt, now, reason, message, found_cond,
                                     (SCALING_ACTIVE, False, reason, message), observed=True)
        self.recorder.record(raw, "Warning", reason, message)
        rt.failures = 0
        rt.next_due = now + interval

    def _api_failure(
        self,
        raw: Obj,
        rt: PolicyRuntime,
        now: float,
        interval: float,
        operation: str,
        err: BaseException,
        event: tuple[str, str] | None = None,
    ) -> None:
        rt.failures += 1
        delay = backoff_seconds(rt.failures, interval, max(interval, self.max_backoff_seconds))
        rt.next_due = now + delay
        self.metrics.api_errors.labels(operation=operation, code=error_code(err)).inc()
        msg = f"{operation} failed: {describe_error(err)}; retrying in {delay:.0f}s (attempt {rt.failures})"
        log.warning(msg, extra={"policy": policy_key(raw)})
        self.status_writer.not_ready(raw, rt, now, "APIError", msg)
        reason, message = event or ("APIError", f"{operation} failed: {describe_error(err)}")
        self.recorder.record(raw, "Warning", reason, message)

    def _count_error(self, raw: Obj, stage: str, err: BaseException) -> None:
        meta = raw.get("metadata") or {}
        self.metrics.policy_errors.labels(
            str(meta.get("namespace")), str(meta.get("name")), stage, type(err).__name__
        ).inc()

    def _policy_failure(self, raw: Obj, rt: PolicyRuntime, now: float, stage: str, err: BaseException) -> None:
        """One policy's step raised: back that policy off exponentially and say so; never raise from here."""
        rt.failures += 1
        interval = self._interval(rt)
        delay = backoff_seconds(rt.failures, interval, max(interval, self.max_backoff_seconds))
        rt.next_due = now + delay
        try:
            self._count_error(raw, stage, err)
            what = describe_error(err)[:500]
            msg = f"{stage} failed: {what}; retrying in {delay:.0f}s (attempt {rt.failures})"
            log.error(msg, exc_info=err, extra={"policy": policy_key(raw)})
            self.status_writer.not_ready(raw, rt, now, "ReconcileError", msg)
            self.recorder.record(raw, "Warning", "ReconcileError", f"{stage} failed: {what}")
        except Exception:
            log.exception("could not report the failure of %s", policy_key(raw))

    def _record_decision(
        self,
        p: _Prepared,
        d: Decision,
        dry: bool,
        applied: bool,
        ready: int,
        starting: int,
        now: float,
        source_error: str | None,
    ) -> None:
        policy, rt, reading, raw = p.policy, p.rt, p.reading, p.raw
        gen = (raw.get("metadata") or {}).get("generation")
        assert rt.state is not None
        status = self.status_writer.base(raw, rt)
        conds = status.get("conditions") or []
        desc = p.target.description
        dry_why = ("--dry-run flag" if self.dry_run else "spec.dryRun") if dry else None
        slo_before = get_condition(conds, SLO_INFEASIBLE)
        conds = decision_conditions(conds, policy.spec, d, reading, desc=desc, ready=ready, starting=starting,
                                    dry_why=dry_why, source_error=source_error, now=now, gen=gen)
        status.update(
            observedGeneration=gen,
            desiredReplicas=d.desired_replicas,
            currentReplicas=reading.replicas,
            readyReplicas=ready,
            lastDecision=decision_status(d, now, dry, applied),
            forecast={
                "workReplicas": None if d.forecast_work is None else round(d.forecast_work, 4),
                "horizonSeconds": round(d.lead_time_seconds, 1),
            },
            leadTimeSeconds=round(d.lead_time_seconds, 1),
            learned=learned_status(policy.spec, rt.state),
            coreState=rt.state.to_dict(),
            conditions=conds,
        )
        drain = self.drain.report(policy.key, raw, d, self.recorder, desc)
        if drain or "drain" in status:
            status["drain"] = drain
        mark = self.observer.watermark(policy.key)
        if mark is not None:
            status["coldStartWatermark"] = mark
        if applied:
            status["lastScaleTime"] = decision_status(d, now, dry, applied)["time"]
        if p.warm is not None:
            status["warmCapacity"] = p.warm.to_dict()
        else:
            status.pop("warmCapacity", None)
        if p.deletion_cost is not None:
            status["deletionCost"] = p.deletion_cost
        self.status_writer.persist(raw, rt, status, now)
        if (slo_event := slo_infeasible_event(slo_before, get_condition(conds, SLO_INFEASIBLE))) is not None:
            self.recorder.record(raw, *slo_event)

        self.metrics.decided(policy.metadata.namespace, policy.metadata.name, d, reading.replicas, ready)
        self._scale_events(p, d, dry, applied)

    def _scale_events(self, p: _Prepared, d: Decision, dry: bool, applied: bool) -> None:
        """The change a decision made (or would have made in a dry run, or could not make on a blocked target)
        as an event, and a written one in the scale-writes count."""
        raw, reading, desc, blocked = p.raw, p.reading, p.target.description, p.reading.blocked
        if d.desired_replicas is None or d.desired_replicas == reading.replicas:
            if blocked is not None and blocked.reason == "Conflict":
                self.recorder.record(raw, "Warning", blocked.reason, blocked.message)
            return
        up = d.desired_replicas > reading.replicas
        if applied:
            self.metrics.scale_writes.labels(p.policy.metadata.namespace, p.policy.metadata.name,
                                             "up" if up else "down").inc()
            self.recorder.record(raw, "Normal", "ScaledUp" if up else "ScaledDown",
                                 f"{desc}: {d.message} [{d.reason.value}]")
        elif dry and blocked is None:
            self.recorder.record(raw, "Normal", "DryRun",
                                 f"dry run: would scale {desc} {reading.replicas} -> {d.desired_replicas} "
                                 f"[{d.reason.value}]")
        elif blocked is not None:
            self.recorder.record(raw, "Warning", blocked.reason, blocked.message)
