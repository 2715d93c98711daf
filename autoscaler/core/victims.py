"""Which replicas a scale-down removes: deletion costs so the ReplicaSet picks the least busy pods, and the
ReplicaSet's own ranking (with or without those costs), so the simulator removes what Kubernetes would.

Kubernetes' ReplicaSet controller (pkg/controller/replicaset/replica_set.go, `getPodsToDelete`) sorts the
active pods with `ActivePodsWithRanks.Less` (pkg/controller/controller_utils.go) and deletes the first
`diff`. The order, first rule that tells two pods apart wins:
  1. unassigned (no node) before assigned;  2. Pending before Unknown before Running;
  3. not ready before ready;  4. lower `controller.kubernetes.io/pod-deletion-cost` before higher;
  5. more ready pods of the same ReplicaSet on its node before fewer;
  6. ready for less time before ready for longer (log2 buckets of the age under LogarithmicScaleDown);
  7. more container restarts before fewer;  8. created more recently before older.
So a deletion cost only orders pods that tie on 1-3: a not-ready pod is removed before any ready one
whatever the costs say. That is what we want (a not-ready pod serves nothing) and the reason the costs
below rank ready pods only by their in-flight requests. See docs/scale-down.md.

`deletion_costs` is pure: the pods of one target with their in-flight requests (running + waiting,
None when unknown) and the number of replicas to remove -> the annotation value per pod. A pod whose
in-flight count is unknown is treated as the busiest possible (the int32 maximum): it is never preferred
as a victim over a pod we know to be less busy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
MAX_COST = 2**31 - 1  # the annotation is an int32 (the API server rejects anything else)
MIN_COST = -(2**31)
UNKNOWN_COST = MAX_COST


@dataclass(frozen=True, slots=True)
class PodLoad:
    """One pod of the target as far as a scale-down cares. Times are seconds on any common clock."""

    name: str
    ready: bool
    inflight: float | None = None  # running + waiting requests; None: unknown
    assigned: bool = True  # has a node
    ready_since: float | None = None  # when it last became Ready (None: not ready / unknown)
    created: float = 0.0
    # Whether other pods (replicas or warm placeholders) keep its node when it goes; None: unknown.
    node_shared: bool | None = None


def cost_of(inflight: float | None) -> int:
    """The deletion cost for a pod with `inflight` requests: the count itself (rounded up, so a fraction of a
    request never ties with an idle pod), capped below the unknown cost; unknown -> the int32 maximum."""
    if inflight is None or not math.isfinite(inflight):
        return UNKNOWN_COST
    return min(UNKNOWN_COST - 1, max(0, math.ceil(inflight)))


def deletion_costs(pods: Sequence[PodLoad], remove: int, keep_nodes_warm: bool = False) -> dict[str, int]:
    """Deletion cost per pod name so that removing `remove` replicas removes the pods with the fewest
    in-flight requests (after the not-ready ones, which the ReplicaSet removes first anyway). Empty when
    nothing is removed or every pod goes (then the choice does not matter and no pod needs a patch).

    `keep_nodes_warm` (spec.warmCapacity on): among pods with equal in-flight requests, one whose node other
    pods keep goes first, so the scale-down frees GPUs on nodes that stay (their image and weights stay
    cached for the next start) rather than emptying a node the cluster autoscaler would then remove."""
    if remove <= 0 or remove >= len(pods):
        return {}
    if not keep_nodes_warm:
        return {p.name: cost_of(p.inflight) for p in pods}
    return {p.name: _warm_cost(p) for p in pods}


def _warm_cost(p: PodLoad) -> int:
    base = cost_of(p.inflight)
    if base == UNKNOWN_COST:
        return UNKNOWN_COST
    alone = 0 if p.node_shared else 1  # unknown counts as alone: keep it (its node may empty)
    return min(UNKNOWN_COST - 1, 2 * base + alone)


def _rank_key(p: PodLoad, cost: int) -> tuple[object, ...]:
    """Sort key of `ActivePodsWithRanks.Less` for the rules the simulator and the tests model (1, 3, 4, 6,
    8; every pod here is Running and each sits on its own node, so rules 2 and 5 tie)."""
    ready_age_key = -(p.ready_since if p.ready_since is not None else math.inf)  # ready later first
    return (
        p.assigned,
        p.ready,
        cost,
        ready_age_key if p.ready else 0.0,
        -p.created,  # created more recently first
        p.name,  # the real controller breaks the last tie pseudo-randomly; here: by name, deterministic
    )


def replicaset_victims(
    pods: Sequence[PodLoad], remove: int, costs: Mapping[str, int] | None = None
) -> list[str]:
    """The names of the `remove` pods the ReplicaSet deletes, in order, given the deletion costs on them
    (`costs` None or missing entries: no annotation, i.e. cost 0, the Kubernetes default)."""
    if remove <= 0:
        return []
    c = costs or {}
    ranked = sorted(pods, key=lambda p: _rank_key(p, c.get(p.name, 0)))
    return [p.name for p in ranked[:remove]]
