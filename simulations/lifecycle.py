"""Replica lifecycle and the GPU cluster, shared by the request-level and the fluid fleet.

requested → scheduling (free GPU on a ready node) or node_provisioning (a new node boots) → image_pull
(skipped when the node has the image) → weight_load → warmup → ready → draining → gone.

- Stage durations are lognormal around the cold-start profile's medians (sigma = `spread`), drawn from a
  seeded generator in a fixed order: replica k always gets row k of the table, node j row j, so two
  policies replayed on one scenario see the same cold starts, and the oracle can `peek` at them.
- Nodes hold `gpus_per_node` GPUs; a replica that finds no free GPU boots a new node (or joins one that is
  booting and has room). A node left with no replica for `node_idle_removal_seconds` is removed
  (cluster-autoscaler scale-down-unneeded-time), so a replica re-requested soon after a scale-down takes
  the fast path. With `max_gpus` reached a replica waits unschedulable until a GPU frees.
- GPU-seconds run from the request until the replica is gone (GPUs are held while starting and draining).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from autoscaler.core import ClusterFacts, StageObservation, StartingReplica
from simulations.profiles import ClusterSpec, ColdStartProfile

_TABLE_CHUNK = 1024
_UNLIMITED_SLOTS = 1000  # what the cluster reports as free slots when GPUs are unlimited (warm)


@dataclass(slots=True)
class Node:
    gpus: int
    ready_at: float
    has_image: bool
    used: int = 0
    idle_since: float | None = None
    removed: bool = False


@dataclass(slots=True)
class ReplicaLife:
    rid: int
    requested_at: float
    gpus: int
    node: Node | None
    # (stage, start, end, situation) in order; empty until placed (unschedulable)
    stages: list[tuple[str, float, float, str]] = field(default_factory=list)
    ready_at: float = math.inf
    drain_at: float | None = None
    gone_at: float | None = None

    def stage_at(self, now: float) -> tuple[str, float]:
        """(stage, seconds in it) for a starting replica."""
        if not self.stages:
            return "node_provisioning", now - self.requested_at
        for stage, start, end, _ in self.stages:
            if now < end:
                return stage, max(0.0, now - start)
        stage, start, _, _ = self.stages[-1]
        return stage, max(0.0, now - start)


class Lifecycle:
    """Cold starts, node placement and GPU-time accounting for one simulated deployment."""

    def __init__(self, profile: ColdStartProfile, cluster: ClusterSpec, gpus_per_replica: int, seed: int):
        self.profile, self.cluster, self.gpus = profile, cluster, gpus_per_replica
        self._rng = np.random.default_rng(seed)
        self._rows: np.ndarray = np.empty((0, 4))  # scheduling, image_pull, weight_load, warmup
        self._node_rows: np.ndarray = np.empty(0)
        self.nodes: list[Node] = []
        self.unlimited = profile.free_gpus is None
        self.replicas: list[ReplicaLife] = []
        self.unplaced: list[ReplicaLife] = []
        self.newly_placed: list[ReplicaLife] = []  # placed after waiting for quota; the fleet drains it
        self._obs: list[tuple[float, int, int, StageObservation]] = []  # (time, rid, order, observation)
        self._cancelled: set[int] = set()
        self._gpu_seconds_done = 0.0
        self._nodes_requested = 0
        if not self.unlimited and profile.free_gpus:
            self._add_ready_nodes(profile.free_gpus, 0.0)

    # ---- tables of pre-drawn durations -------------------------------------------------------
    def _draw(self, median: float, n: int) -> np.ndarray:
        if median <= 0:
            return np.zeros(n)
        return median * np.exp(self.profile.spread * self._rng.standard_normal(n))

    def _row(self, k: int) -> np.ndarray:
        while k >= len(self._rows):
            p = self.profile
            medians = (p.scheduling_seconds, p.image_pull_seconds, p.weight_load_seconds, p.warmup_seconds)
            block = np.stack([self._draw(m, _TABLE_CHUNK) for m in medians], axis=1)
            nodes = self._draw(self.profile.node_provisioning_seconds, _TABLE_CHUNK)
            self._rows = np.concatenate([self._rows, block])
            self._node_rows = np.concatenate([self._node_rows, nodes])
        return self._rows[k]

    def _node_duration(self, j: int) -> float:
        while j >= len(self._node_rows):
            self._row(len(self._rows))
        return float(self._node_rows[j])

    # ---- cluster ------------------------------------------------------------------------------
    def _add_ready_nodes(self, gpus: int, now: float) -> None:
        per = max(self.cluster.gpus_per_node, self.gpus)
        for _ in range(math.ceil(gpus / per)):
            # A warm pool does not expire: these nodes are there before the run and stay.
            self.nodes.append(Node(gpus=per, ready_at=now, has_image=True, idle_since=None))

    def _expire_idle_nodes(self, now: float) -> None:
        limit = self.cluster.node_idle_removal_seconds
        for n in self.nodes:
            if not n.removed and n.used == 0 and n.idle_since is not None and now - n.idle_since >= limit:
                n.removed = True
        if any(n.removed for n in self.nodes):
            self.nodes = [n for n in self.nodes if not n.removed]

    def _gpus_in_use(self) -> int:
        return sum(n.gpus for n in self.nodes)

    def _find_node(self, now: float) -> tuple[Node | None, bool]:
        """(node, is_new_or_booting) for a new replica, or (None, False) when the quota is exhausted."""
        self._expire_idle_nodes(now)
        best: Node | None = None
        for n in self.nodes:  # prefer ready nodes with the image, then ready nodes, then booting ones
            if n.gpus - n.used >= self.gpus:
                rank = (n.ready_at > now, not n.has_image)
                if best is None or rank < (best.ready_at > now, not best.has_image):
                    best = n
        if best is not None:
            return best, best.ready_at > now
        quota = self.cluster.max_gpus
        per = max(self.cluster.gpus_per_node, self.gpus)
        if quota is not None and self._gpus_in_use() + per > quota:
            return None, False
        node = Node(gpus=per, ready_at=now + self._node_duration(self._nodes_requested),
                    has_image=self.profile.image_preloaded)
        self._nodes_requested += 1
        self.nodes.append(node)
        return node, True

    def free_slots(self, now: float) -> int:
        if self.unlimited:
            return _UNLIMITED_SLOTS
        self._expire_idle_nodes(now)
        return sum((n.gpus - n.used) // self.gpus for n in self.nodes if n.ready_at <= now)

    def cluster_facts(self, now: float) -> ClusterFacts:
        if self.unlimited:
            return ClusterFacts(free_replica_slots=_UNLIMITED_SLOTS, image_cached=True)
        free = self.free_slots(now)
        if free:
            cached = any(n.has_image and n.gpus - n.used >= self.gpus for n in self.nodes if n.ready_at <= now)
        else:
            cached = self.profile.image_preloaded
        return ClusterFacts(free_replica_slots=free, image_cached=cached)

    # ---- replicas -------------------------------------------------------------------------------
    def _timeline(self, life: ReplicaLife, now: float, node: Node | None, booting: bool) -> None:
        sched, pull, load, warm = self._row(life.rid)
        t = now
        stages: list[tuple[str, float, float, str]] = []
        if booting and node is not None:
            end = max(node.ready_at, now)
            stages.append(("node_provisioning", t, end, "default"))
        else:
            end = t + float(sched)
            stages.append(("scheduling", t, end, "default"))
        t = end
        has_image = self.unlimited or (node is not None and node.has_image)
        pull_s = 0.0 if has_image else float(pull)
        stages.append(("image_pull", t, t + pull_s, "cached" if has_image else "uncached"))
        t += pull_s
        if node is not None:
            node.has_image = True  # later replicas on this node find the image
        stages.append(("weight_load", t, t + float(load), "default"))
        t += float(load)
        stages.append(("warmup", t, t + float(warm), "default"))
        t += float(warm)
        life.stages, life.ready_at = stages, t
        for order, (stage, s0, s1, situation) in enumerate(stages):
            obs = StageObservation(stage, s1 - s0, situation)  # type: ignore[arg-type]
            heapq.heappush(self._obs, (s1, life.rid, order, obs))

    def _place(self, life: ReplicaLife, now: float) -> bool:
        if self.unlimited:
            self._timeline(life, now, None, False)
            return True
        node, booting = self._find_node(now)
        if node is None:
            return False
        node.used += self.gpus
        node.idle_since = None
        life.node = node
        self._timeline(life, now, node, booting)
        return True

    def request(self, now: float) -> ReplicaLife:
        """A new replica; its `ready_at` is known unless it is waiting for GPU quota (then inf)."""
        life = ReplicaLife(len(self.replicas), now, self.gpus, None)
        self.replicas.append(life)
        if not self._place(life, now):
            self.unplaced.append(life)
        return life

    def add_ready(self, now: float) -> ReplicaLife:
        """A replica that is already serving at the start of the run (its node is ready and warm)."""
        life = ReplicaLife(len(self.replicas), now, self.gpus, None, ready_at=now)
        if not self.unlimited:
            node, booting = self._find_node(now)
            if node is None or booting:
                if node is not None:
                    node.ready_at = now
                    node.has_image = True
                else:
                    node = Node(gpus=max(self.cluster.gpus_per_node, self.gpus), ready_at=now, has_image=True)
                    self.nodes.append(node)
            node.used += self.gpus
            node.idle_since = None
            life.node = node
        self.replicas.append(life)
        return life

    def peek_ready_in(self, now: float) -> float:
        """Seconds until a replica requested now would be ready (the oracle's perfect foresight)."""
        sched, pull, load, warm = self._row(len(self.replicas))
        if self.unlimited:
            return float(sched + load + warm)
        self._expire_idle_nodes(now)
        node: Node | None = None
        for n in self.nodes:
            if n.gpus - n.used >= self.gpus and (node is None or n.ready_at < node.ready_at):
                node = n
        if node is None:
            t = self._node_duration(self._nodes_requested)
            has_image = self.profile.image_preloaded
        else:
            t = max(0.0, node.ready_at - now) if node.ready_at > now else float(sched)
            has_image = node.has_image
        return t + (0.0 if has_image else float(pull)) + float(load) + float(warm)

    def _free(self, life: ReplicaLife, now: float) -> None:
        node = life.node
        if node is not None:
            node.used -= life.gpus
            if node.used <= 0:
                node.used = 0
                node.idle_since = now
        life.gone_at = now
        self._gpu_seconds_done += (now - life.requested_at) * life.gpus
        self._retry_unplaced(now)

    def _retry_unplaced(self, now: float) -> None:
        while self.unplaced:
            if not self._place(self.unplaced[0], now):
                return
            self.newly_placed.append(self.unplaced.pop(0))

    def cancel(self, life: ReplicaLife, now: float) -> None:
        """Remove a replica that is not ready yet: its GPU is released now."""
        self._cancelled.add(life.rid)
        if life in self.unplaced:
            self.unplaced.remove(life)
        self._free(life, now)

    def gone(self, life: ReplicaLife, now: float) -> None:
        """A drained (or never-serving) replica leaves and gives back its GPUs."""
        self._free(life, now)

    def take_observations(self, now: float) -> tuple[StageObservation, ...]:
        """Stages completed up to `now` since the last call (what pod events would tell a controller)."""
        out = []
        while self._obs and self._obs[0][0] <= now:
            _, rid, _, o = heapq.heappop(self._obs)
            if rid not in self._cancelled:
                out.append(o)
        return tuple(out)

    def starting_view(self, lives: list[ReplicaLife], now: float) -> tuple[StartingReplica, ...]:
        out = []
        for life in lives:
            stage, in_stage = life.stage_at(now)
            out.append(StartingReplica(stage, now - life.requested_at, in_stage,  # type: ignore[arg-type]
                                       unschedulable=not life.stages))
        return tuple(out)

    def gpu_seconds(self, now: float) -> float:
        alive = sum((now - r.requested_at) * r.gpus for r in self.replicas if r.gone_at is None)
        return self._gpu_seconds_done + alive


class LifecycleFacts:
    """What both fleets (request-level and fluid) answer straight from their replica lifecycle."""

    lifecycle: Lifecycle
    now: float

    def cluster_facts(self, t: float) -> ClusterFacts:
        return self.lifecycle.cluster_facts(t)

    def take_observations(self, t: float) -> tuple[StageObservation, ...]:
        return self.lifecycle.take_observations(t)

    def gpu_seconds(self, t: float | None = None) -> float:
        return self.lifecycle.gpu_seconds(self.now if t is None else t)
