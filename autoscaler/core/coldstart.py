"""Cold-start model: how long until a replica requested now is ready.

Per stage, the policy gives a prior median; observed durations (robust statistics over recent samples,
kept per cache situation) replace it as they arrive. The prior counts as a few pseudo-samples so one odd
observation cannot swing the estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autoscaler.core.signals import STAGES, ClusterFacts, Stage, StageObservation
from autoscaler.policy import ColdStartSpec

MAX_SAMPLES = 32
PRIOR_WEIGHT = 3  # pseudo-samples given to the prior
WARM = "warm"  # the situation of a replica that landed on a warm slot
# weight_load from pre-staged, node-local files, as a share of the (download + load) prior: the cold-start
# profiles of docs/cold-start.md put loading an 8B model from local NVMe at ~10 s against ~60 s when the
# weights are downloaded first. Learned "weight_load/warm" samples replace it as they arrive.
PRESTAGED_WEIGHT_LOAD_SHARE = 10.0 / 60.0
_Z = {0.5: 0.0, 0.75: 0.674, 0.8: 0.842, 0.9: 1.2816, 0.95: 1.6449, 0.99: 2.3263}


def _z(q: float) -> float:
    if q in _Z:
        return _Z[q]
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)


def _key(stage: Stage, situation: str) -> str:
    return f"{stage}/{situation}"


@dataclass(frozen=True, slots=True)
class StageEstimate:
    median_seconds: float
    high_seconds: float
    samples: int


@dataclass(frozen=True, slots=True)
class ColdStartStats:
    """Recent observed durations per `stage/situation` (newest last, at most MAX_SAMPLES each)."""

    samples: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def get(self, stage: Stage, situation: str) -> tuple[float, ...]:
        key = _key(stage, situation)
        for k, v in self.samples:
            if k == key:
                return v
        return ()

    def observe(self, observations: tuple[StageObservation, ...]) -> ColdStartStats:
        if not observations:
            return self
        table = dict(self.samples)
        for o in observations:
            if not (o.seconds >= 0 and math.isfinite(o.seconds)):
                continue
            key = _key(o.stage, o.situation)
            table[key] = (*table.get(key, ()), float(o.seconds))[-MAX_SAMPLES:]
        return ColdStartStats(tuple(sorted(table.items())))

    def to_dict(self) -> dict[str, list[float]]:
        return {k: [round(x, 3) for x in v] for k, v in self.samples}

    @staticmethod
    def from_dict(d: dict[str, list[float]]) -> ColdStartStats:
        def usable(v: list[float]) -> tuple[float, ...]:
            return tuple(x for x in (float(s) for s in v) if 0.0 <= x < math.inf)[-MAX_SAMPLES:]

        return ColdStartStats(tuple(sorted((str(k), usable(v)) for k, v in d.items())))


def _prior(spec: ColdStartSpec, stage: Stage, situation: str, weights_prestaged: bool = False) -> float:
    if stage == "image_pull":
        return 0.0 if situation in ("cached", WARM) else spec.image_pull_seconds
    if stage == "weight_load" and situation == WARM and weights_prestaged:
        return spec.weight_load_seconds * PRESTAGED_WEIGHT_LOAD_SHARE
    return {
        "scheduling": spec.scheduling_seconds,
        "node_provisioning": spec.node_provisioning_seconds,
        "weight_load": spec.weight_load_seconds,
        "warmup": spec.warmup_seconds,
    }[stage]


def stage_estimate(
    spec: ColdStartSpec, stats: ColdStartStats, stage: Stage, situation: str = "default",
    weights_prestaged: bool = False,
) -> StageEstimate:
    """Median and high quantile of one stage's duration: prior blended with recent observations."""
    prior = _prior(spec, stage, situation, weights_prestaged)
    prior_high = prior * math.exp(_z(spec.quantile) * spec.spread)
    samples = stats.get(stage, situation) if spec.learn else ()
    if not samples:
        return StageEstimate(prior, prior_high, 0)
    ordered = sorted(samples)
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])
    # High quantile from the samples (nearest rank), never below the median.
    high = max(median, ordered[min(n - 1, math.ceil(spec.quantile * n) - 1)])
    w = PRIOR_WEIGHT / (PRIOR_WEIGHT + n)
    return StageEstimate(w * prior + (1 - w) * median, w * prior_high + (1 - w) * high, n)


@dataclass(frozen=True, slots=True)
class LeadTime:
    """Expected time from ordering a replica to it serving, and the stages that make it up."""

    median_seconds: float
    high_seconds: float
    stages: tuple[tuple[str, float], ...]


_WARM_STAGES: tuple[Stage, ...] = ("scheduling", "image_pull", "weight_load", "warmup")


def _warm_estimate(spec: ColdStartSpec, stats: ColdStartStats, stage: Stage, weights_prestaged: bool) -> StageEstimate:
    """A stage on a warm slot: learned warm samples when there are any. Without them, stages a warm slot
    changes (image pull; weight load when pre-staged) start from their warm prior, and the others (scheduling,
    warmup, weights still downloaded) from what cold starts have taught."""
    changed = stage == "image_pull" or (stage == "weight_load" and weights_prestaged)
    if changed or (spec.learn and stats.get(stage, WARM)):
        return stage_estimate(spec, stats, stage, WARM, weights_prestaged)
    return stage_estimate(spec, stats, stage)


def lead_time(
    spec: ColdStartSpec, stats: ColdStartStats, cluster: ClusterFacts, replicas_needed: int = 1,
    weights_prestaged: bool = False,
) -> LeadTime:
    """How long until a replica requested now is ready, given what the cluster says.

    Unknown cluster facts take the slow path: planning for a cold start that turns out warm costs a
    little GPU time; planning for a warm start that turns out cold costs the SLO. With at least
    `replicas_needed` warm slots (placeholders to preempt), the replica lands warm: scheduling (the
    preemption) instead of node provisioning, no image pull, and weights read from the node when pre-staged.
    """
    if cluster.warm_slots is not None and cluster.warm_slots >= max(1, replicas_needed):
        return _sum(tuple((s, _warm_estimate(spec, stats, s, weights_prestaged)) for s in _WARM_STAGES))
    free = cluster.free_replica_slots
    node_stage: Stage = "scheduling" if free is not None and free >= replicas_needed else "node_provisioning"
    pull_situation = "cached" if cluster.image_cached else "uncached"
    parts = (
        (node_stage, stage_estimate(spec, stats, node_stage)),
        ("image_pull", stage_estimate(spec, stats, "image_pull", pull_situation)),
        ("weight_load", stage_estimate(spec, stats, "weight_load")),
        ("warmup", stage_estimate(spec, stats, "warmup")),
    )
    return _sum(parts)


def _sum(parts: tuple[tuple[str, StageEstimate], ...]) -> LeadTime:
    median = sum(p.median_seconds for _, p in parts)
    # Stage durations are positively correlated in practice (same node, same disk), so add the highs.
    high = sum(p.high_seconds for _, p in parts)
    return LeadTime(median, high, tuple((name, round(p.median_seconds, 3)) for name, p in parts))


def stage_medians(spec: ColdStartSpec, stats: ColdStartStats, cluster: ClusterFacts) -> dict[Stage, float]:
    """Median duration of every stage (image pull for the cluster's cache situation), computed once per
    tick for all starting replicas."""
    pull_situation = "cached" if cluster.image_cached else "uncached"
    return {
        stage: stage_estimate(spec, stats, stage, pull_situation if stage == "image_pull" else "default").median_seconds
        for stage in STAGES
    }


_AFTER_NODE: tuple[Stage, ...] = ("image_pull", "weight_load", "warmup")


def remaining_seconds(medians: dict[Stage, float], stage: Stage, stage_age: float) -> float:
    """Expected time until a replica now in `stage` (for `stage_age` seconds) is ready: what is left of its
    current stage (never negative: an overdue stage still has the later ones ahead) plus the later stages."""
    later = _AFTER_NODE if stage in ("scheduling", "node_provisioning") else _AFTER_NODE[_AFTER_NODE.index(stage) + 1:]
    return max(0.0, medians[stage] - stage_age) + sum(medians[s] for s in later)
