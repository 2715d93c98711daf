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

**Warm slots** (`ClusterSpec.warm_slots`, or `set_warm_slots` from a policy; docs/warm-capacity-sim.md): a
placeholder pod at a low priority holds one replica's GPUs on a node; it is placed like a replica (a free GPU
on a ready node, else a booting node with room, else a new node; a new node boots, a node without the image
pulls it) and is warm once its node is ready, the image is there and (with `warm_weight_load_seconds`) the
weights are staged on the node's disk. It never serves and costs GPU-seconds from its placement until it is
gone (reported apart as warm GPU-seconds too). Scheduling follows the scheduler's priority preemption: a new
replica takes a free GPU on a ready node if there is one; else it preempts a placeholder on a ready node
(the warmest first); else it waits for a booting node with room, else takes a booting placeholder's claim,
else boots a node. A replica on a warm placeholder's GPUs pays scheduling, weight load (the same draw scaled
to the pre-staged median when weights are staged) and warmup only, observed with situation "warm"; one on a
placeholder still warming waits for what is left of its node boot and image pull. A preempted placeholder is
replaced (a new pod, placed like any other; it waits for quota after the replicas do). Placeholders draw
their own durations from a second generator, so replica k still gets row k.
Every replica start is counted as `warm` (a warm slot), `cached` (no node boot, no image pull) or `cold`.
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

    start: str = ""  # warm | cached | cold, once placed

    def stage_at(self, now: float) -> tuple[str, float]:
        """(stage, seconds in it) for a starting replica."""
        if not self.stages:
            return "node_provisioning", now - self.requested_at
        for stage, start, end, _ in self.stages:
            if now < end:
                return stage, max(0.0, now - start)
        stage, start, _, _ = self.stages[-1]
        return stage, max(0.0, now - start)


@dataclass(slots=True)
class Placeholder:
    """A warm slot: a low-priority pod holding one replica's GPUs (never serves)."""

    pid: int
    gpus: int
    node: Node | None = None  # None: pending (no GPU within the quota yet)
    placed_at: float = math.inf  # GPUs held (billed) from here
    image_at: float = math.inf  # the image is on its node
    warm_at: float = math.inf  # node ready, image there, weights staged (when configured): a replica starts warm


START_KINDS: tuple[str, ...] = ("warm", "cached", "cold")


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
        # warm capacity
        self.warm_target = cluster.warm_slots
        self.placeholders: list[Placeholder] = []  # alive: placed or pending
        self._ph_made = 0
        self._ph_rng = np.random.default_rng([seed, 7])  # their own draws: replicas' rows never shift
        self._warm_seconds_done = 0.0
        self.starts: dict[str, int] = dict.fromkeys(START_KINDS, 0)
        for _ in range(self.warm_target):
            self._add_ready_placeholder(0.0)

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
            return ClusterFacts(free_replica_slots=_UNLIMITED_SLOTS, image_cached=True,
                                warm_slots=self.warm_slots(now))
        free = self.free_slots(now)
        if free:
            cached = any(n.has_image and n.gpus - n.used >= self.gpus for n in self.nodes if n.ready_at <= now)
        else:
            cached = self.profile.image_preloaded
        return ClusterFacts(free_replica_slots=free, image_cached=cached, warm_slots=self.warm_slots(now))

    def warm_slots(self, now: float) -> int | None:
        """Placeholders warm now (what a new replica would land on); None when warm capacity was never used."""
        if not self.warm_target and not self._ph_made:
            return None
        return sum(1 for p in self.placeholders if p.warm_at <= now)

    # ---- replicas -------------------------------------------------------------------------------
    def _timeline(self, life: ReplicaLife, now: float, node: Node | None, booting: bool,
                  image_at: float | None = None) -> None:
        """The replica's stages from `now`; `image_at`: the image arrives then on this node (a placeholder
        that is still pulling it), instead of the node's own state."""
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
        if image_at is not None:
            pull_s = max(0.0, image_at - t)
            has_image = pull_s == 0.0
        else:
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
        life.start = "cold" if stages[0][0] == "node_provisioning" or not has_image else "cached"
        self._set_stages(life, stages, t)

    def _timeline_warm(self, life: ReplicaLife, now: float) -> None:
        """A replica on a warm slot: scheduling (the preemption), weight load, warmup; no node, no pull."""
        sched, _, load, warm = self._row(life.rid)
        load = self._warm_load(float(load))
        t = now
        stages: list[tuple[str, float, float, str]] = []
        for stage, seconds in (("scheduling", float(sched)), ("image_pull", 0.0), ("weight_load", float(load)),
                               ("warmup", float(warm))):
            stages.append((stage, t, t + seconds, "warm"))
            t += seconds
        life.start = "warm"
        self._set_stages(life, stages, t)

    def _warm_load(self, drawn: float) -> float:
        """Weight load on a warm slot: with weights pre-staged, the same draw scaled from the profile's
        download-and-load median to the local-disk median (`warm_weight_load_seconds`); else unchanged."""
        local = self.cluster.warm_weight_load_seconds
        if local is None:
            return drawn
        median = self.profile.weight_load_seconds
        return drawn * (local / median) if median > 0 else local

    def _set_stages(self, life: ReplicaLife, stages: list[tuple[str, float, float, str]], t: float) -> None:
        life.stages, life.ready_at = stages, t
        self.starts[life.start] += 1
        for order, (stage, s0, s1, situation) in enumerate(stages):
            obs = StageObservation(stage, s1 - s0, situation)  # type: ignore[arg-type]
            heapq.heappush(self._obs, (s1, life.rid, order, obs))

    def _place(self, life: ReplicaLife, now: float) -> bool:
        if self.unlimited:
            self._timeline(life, now, None, False)
            return True
        if self.placeholders and self._take_placeholder(life, now):
            return True
        node, booting = self._find_node(now)
        if node is None:
            return False
        node.used += self.gpus
        node.idle_since = None
        life.node = node
        self._timeline(life, now, node, booting)
        return True

    # ---- warm slots --------------------------------------------------------------------------------
    def _take_placeholder(self, life: ReplicaLife, now: float) -> bool:
        """Priority preemption: the replica takes a placeholder's GPUs when it fits on no ready node."""
        self._expire_idle_nodes(now)
        room = [n for n in self.nodes if n.gpus - n.used >= self.gpus]
        if any(n.ready_at <= now for n in room):
            return False  # it fits without preempting anyone
        placed = [p for p in self.placeholders if p.node is not None]
        on_ready = [p for p in placed if p.node is not None and p.node.ready_at <= now]
        if on_ready:
            ph = min(on_ready, key=lambda p: p.warm_at)
        elif room or not placed:
            return False  # it waits for a booting node with room (or boots one), as any pending pod
        else:
            ph = min(placed, key=lambda p: p.node.ready_at if p.node is not None else math.inf)
        node = ph.node
        assert node is not None
        self._end_placeholder(ph, now)  # its GPUs go to the replica: the node's use does not change
        life.node = node
        if now >= ph.warm_at:
            self._timeline_warm(life, now)
        else:
            self._timeline(life, now, node, node.ready_at > now, image_at=ph.image_at)
        while len(self.placeholders) < self.warm_target:  # the placeholders' ReplicaSet recreates it
            self._request_placeholder(now)
        return True

    def _end_placeholder(self, ph: Placeholder, now: float) -> None:
        self.placeholders.remove(ph)
        if ph.node is not None:
            self._warm_seconds_done += (now - ph.placed_at) * ph.gpus

    def _ph_draws(self) -> tuple[float, float, float]:
        p = self.profile
        z = self._ph_rng.standard_normal(3)
        return tuple(m * math.exp(p.spread * zi) if m > 0 else 0.0  # type: ignore[return-value]
                     for m, zi in zip((p.scheduling_seconds, p.image_pull_seconds, p.weight_load_seconds), z,
                                      strict=True))

    def _add_ready_placeholder(self, now: float) -> None:
        """A placeholder that is warm at the start of the run (its node is ready, image and weights there)."""
        ph = Placeholder(self._ph_made, self.gpus, placed_at=now, image_at=now, warm_at=now)
        self._ph_made += 1
        if not self.unlimited:
            node = next((n for n in self.nodes if n.ready_at <= now and n.gpus - n.used >= self.gpus), None)
            if node is None:
                node = Node(gpus=max(self.cluster.gpus_per_node, self.gpus), ready_at=now, has_image=True)
                self.nodes.append(node)
            node.used += self.gpus
            node.idle_since = None
            ph.node = node
        else:
            ph.node = Node(gpus=self.gpus, ready_at=now, has_image=True, used=self.gpus)  # off the books
        self.placeholders.append(ph)

    def _request_placeholder(self, now: float) -> None:
        ph = Placeholder(self._ph_made, self.gpus)
        self._ph_made += 1
        self.placeholders.append(ph)
        self._place_placeholder(ph, now)

    def _place_placeholder(self, ph: Placeholder, now: float) -> bool:
        sched, pull, stage = self._ph_draws()
        if self.unlimited:
            node: Node | None = Node(gpus=self.gpus, ready_at=now, has_image=True, used=self.gpus)
            booting = False
        else:
            node, booting = self._find_node(now)
            if node is None:
                return False
            node.used += self.gpus
            node.idle_since = None
        assert node is not None
        ph.node, ph.placed_at = node, now
        t = max(node.ready_at, now) if booting else now + sched
        if not node.has_image:
            t += pull
            node.has_image = True  # as for replicas: later pods on the node find it
        ph.image_at = t
        ph.warm_at = t + (stage if self.cluster.warm_weight_load_seconds is not None else 0.0)
        return True

    def set_warm_slots(self, n: int, now: float) -> None:
        """Keep `n` placeholders (a policy's pool size). Shrinking drops pending ones first, then the least
        warm; their GPUs are free at once."""
        if n < 0:
            raise ValueError("warm slots must be ≥ 0")
        self.warm_target = n
        while len(self.placeholders) < n:
            self._request_placeholder(now)
        if len(self.placeholders) > n:
            while len(self.placeholders) > n:
                ph = max(self.placeholders, key=lambda p: (p.node is None, p.warm_at))
                self._end_placeholder(ph, now)
                if ph.node is not None:
                    self._release(ph.node, ph.gpus, now)
            self._retry_unplaced(now)

    def warm_gpu_seconds(self, now: float) -> float:
        alive = sum((now - p.placed_at) * p.gpus for p in self.placeholders if p.node is not None)
        return self._warm_seconds_done + alive

    @property
    def keeps_nodes_warm(self) -> bool:
        """Whether scale-down prefers freeing GPUs on nodes that stay (warm capacity on)."""
        return bool(self.warm_target or self.placeholders)

    def removal_key(self, life: ReplicaLife) -> int:
        """Scale-down preference with warm capacity on (lower goes first): free GPUs on a node that other
        pods keep, where the image stays cached for the next start, before emptying a node the cluster
        autoscaler will remove. Without warm capacity every replica ranks the same (today's choice)."""
        node = life.node
        if not (self.warm_target or self.placeholders) or node is None:
            return 0
        return 0 if node.used > life.gpus else 1

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
        on_ready = [p for p in self.placeholders if p.node is not None and p.node.ready_at <= now]
        if on_ready and (node is None or node.ready_at > now):  # it would preempt the warmest placeholder
            ph = min(on_ready, key=lambda p: p.warm_at)
            if now >= ph.warm_at:
                return float(sched) + self._warm_load(float(load)) + float(warm)
            return float(sched) + max(0.0, ph.image_at - now - float(sched)) + float(load) + float(warm)
        if node is None:
            t = self._node_duration(self._nodes_requested)
            has_image = self.profile.image_preloaded
        else:
            t = max(0.0, node.ready_at - now) if node.ready_at > now else float(sched)
            has_image = node.has_image
        return t + (0.0 if has_image else float(pull)) + float(load) + float(warm)

    def _release(self, node: Node, gpus: int, now: float) -> None:
        node.used -= gpus
        if node.used <= 0:
            node.used = 0
            node.idle_since = now

    def _free(self, life: ReplicaLife, now: float) -> None:
        node = life.node
        if node is not None:
            self._release(node, life.gpus, now)
        life.gone_at = now
        self._gpu_seconds_done += (now - life.requested_at) * life.gpus
        self._retry_unplaced(now)

    def _retry_unplaced(self, now: float) -> None:
        while self.unplaced:
            if not self._place(self.unplaced[0], now):
                return
            self.newly_placed.append(self.unplaced.pop(0))
        for ph in self.placeholders:  # pending placeholders after every replica (lower priority)
            if ph.node is None and not self._place_placeholder(ph, now):
                return

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
        """Every GPU held: replicas from their request until gone, placeholders from placement (warm GPUs)."""
        alive = sum((now - r.requested_at) * r.gpus for r in self.replicas if r.gone_at is None)
        warm = self.warm_gpu_seconds(now) if self._ph_made else 0.0
        return self._gpu_seconds_done + alive + warm



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
