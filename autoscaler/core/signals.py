"""What the decision core sees each tick for one model: a small typed snapshot.

Every measured value carries its age. A value that is absent is `None`, never zero: a zero from a
failed query would look like "no demand" and scale the fleet down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

Stage = Literal["scheduling", "node_provisioning", "image_pull", "weight_load", "warmup"]
STAGES: tuple[Stage, ...] = ("scheduling", "node_provisioning", "image_pull", "weight_load", "warmup")
# Lifecycle order of a starting replica (node stage is either scheduling or node_provisioning).
LIFECYCLE: tuple[Stage, ...] = ("node_provisioning", "image_pull", "weight_load", "warmup")


@dataclass(frozen=True, slots=True)
class Measured:
    """One measured value and how old it is (seconds since it was observed)."""

    value: float | None = None
    age_seconds: float = float("inf")

    def fresh(self, staleness_seconds: float) -> float | None:
        """The value if present, finite and younger than the limit; otherwise None. An age that is NaN,
        negative or infinite is no age at all: such a value is never fresh."""
        v = self.value
        if v is None or not age_within(self.age_seconds, staleness_seconds) or not math.isfinite(v):
            return None
        return v

    def stale(self, staleness_seconds: float) -> bool:
        """A value is present but too old (or its age is unreadable): the source stopped delivering it."""
        return self.value is not None and not age_within(self.age_seconds, staleness_seconds)


def age_within(age_seconds: float, limit_seconds: float) -> bool:
    """Whether an age is a real age (finite, ≥ 0) and at most `limit_seconds`."""
    return 0.0 <= age_seconds <= limit_seconds and age_seconds < math.inf


MISSING = Measured()
# The span the rates and latency histograms are taken over, when the source does not say (PromQL `[1m]`).
DEFAULT_RATE_WINDOW_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class StartingReplica:
    """A replica that has been requested but is not ready yet."""

    stage: Stage
    age_seconds: float  # since the replica (pod) was created
    stage_age_seconds: float = 0.0  # since it entered its current stage
    unschedulable: bool = False


@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """The target as the scale target reports it. `desired` is its current spec.replicas."""

    desired: int
    ready: int
    starting: tuple[StartingReplica, ...] = ()
    terminating: int = 0
    age_seconds: float = 0.0
    # Replicas (ready or starting) on nodes that are leaving (cordoned, or tainted NoSchedule/NoExecute with a
    # taint the pods do not tolerate): they are going, the fleet replaces them first (stages/leaving.py).
    leaving: int = 0

    @property
    def unschedulable(self) -> int:
        return sum(1 for s in self.starting if s.unschedulable)


@dataclass(frozen=True, slots=True)
class ClusterFacts:
    """What the cluster says about where a new replica would land. None means unknown."""

    free_replica_slots: int | None = None  # replicas that fit on GPUs already free on ready nodes
    image_cached: bool | None = None
    # Placeholder pods (spec.warmCapacity) holding GPUs now: that many new replicas land warm (no node
    # provisioning, no image pull; no model download when weights are pre-staged). None: unknown / none.
    warm_slots: int | None = None


@dataclass(frozen=True, slots=True)
class StageObservation:
    """A completed cold-start stage seen by the controller (or the simulator) since the last tick."""

    stage: Stage
    seconds: float
    situation: str = "default"  # e.g. "cached"/"uncached" for image_pull, "warm" on a warm slot


# A bucket with no request above it still has some tail: half a request keeps the geometric step finite.
EMPTY_TAIL = 0.5


@dataclass(frozen=True, slots=True)
class LatencyHistogram:
    """Latencies of the requests observed over the recent rate window, as Prometheus keeps them:
    cumulative counts per bucket upper bound (`le`), the last bound usually +Inf."""

    upper_bounds: tuple[float, ...]
    cumulative_counts: tuple[float, ...]
    age_seconds: float = float("inf")

    @property
    def total(self) -> float:
        return self.cumulative_counts[-1] if self.cumulative_counts else 0.0

    def bucket(self, seconds: float) -> tuple[float, float, float, float] | None:
        """(lower bound, upper bound, requests under the lower bound, requests under the upper) of the
        bucket holding `seconds`, or None past the last bound."""
        lower, below = 0.0, 0.0
        for bound, count in zip(self.upper_bounds, self.cumulative_counts, strict=False):
            if seconds < bound:
                return lower, bound, below, count
            lower, below = bound, count
        return None

    def share_within(self, seconds: float) -> float | None:
        """Share of requests at or under `seconds`. None when there were no requests.

        Inside the bucket that holds `seconds` the share of requests still above is interpolated
        geometrically between the bucket's bounds (an exponential tail there), not linearly as
        `histogram_quantile` does. Latency near an SLO falls off like a tail: most of a (1.0, 2.5] s
        bucket's requests sit near 1 s, and linear interpolation counted 4-9× the misses the replays had
        with a 2-s SLO (benchmarks/slo_count.py; docs/benchmarks.md, decision change L). An empty bucket
        or one with nothing above it (half a request assumed) keeps the step finite; past the last finite
        bound, only the requests under it count."""
        return self._share(seconds, geometric=True)

    def quantile(self, q: float) -> float | None:
        """The latency under which a share `q` of requests fall, the inverse of `share_within` (its
        geometric tail inside the bucket); None with no requests or when the quantile lies past the last
        finite bound."""
        total = self.total
        if not total > 0 or not 0.0 < q < 1.0:
            return None
        lower, below = 0.0, 0.0
        for upper, count in zip(self.upper_bounds, self.cumulative_counts, strict=False):
            if count >= q * total:
                if upper == float("inf"):
                    return None
                above_lower, above_upper = total - below, max(total - count, EMPTY_TAIL)
                if count > below and above_upper < above_lower:
                    frac = math.log((1.0 - q) * total / above_lower) / math.log(above_upper / above_lower)
                else:
                    frac = (q * total - below) / (count - below) if count > below else 1.0
                return lower + min(1.0, max(0.0, frac)) * (upper - lower)
            lower, below = upper, count
        return None

    def linear_share_within(self, seconds: float) -> float | None:
        """Share of requests at or under `seconds`, interpolating linearly inside a bucket (as
        histogram_quantile does). None when there were no requests."""
        return self._share(seconds, geometric=False)

    def _share(self, seconds: float, geometric: bool) -> float | None:
        total = self.total
        if not total > 0:
            return None
        b = self.bucket(seconds)
        if b is None:
            return 1.0
        lower, upper, below, count = b
        if upper == float("inf"):
            return min(1.0, below / total)
        frac = (seconds - lower) / (upper - lower)
        above_lower, above_upper = total - below, max(total - count, EMPTY_TAIL)
        if geometric and count > below and above_upper < above_lower:
            return min(1.0, max(0.0, 1.0 - above_lower * (above_upper / above_lower) ** frac / total))
        return min(1.0, max(0.0, (below + frac * (count - below)) / total))


@dataclass(frozen=True, slots=True)
class Signals:
    """Load and fleet state for one model at one tick. Rates are per second, summed over replicas."""

    request_rate: Measured = MISSING
    prompt_tokens_rate: Measured = MISSING
    generation_tokens_rate: Measured = MISSING
    running: Measured = MISSING
    waiting: Measured = MISSING
    kv_cache_usage: Measured = MISSING  # mean over replicas, 0..1
    queue_time_p90_seconds: Measured = MISSING
    ttft_p90_seconds: Measured = MISSING
    prompt_tokens_p90: Measured = MISSING  # tokens; from the prompt-length histogram below
    ttft_histogram: LatencyHistogram | None = None
    queue_time_histogram: LatencyHistogram | None = None
    # Prompt lengths (tokens) of recent requests, `vllm:request_prompt_tokens`: same cumulative-bucket form.
    prompt_tokens_histogram: LatencyHistogram | None = None
    replicas: ReplicaCounts | None = None
    cluster: ClusterFacts = ClusterFacts()
    observations: tuple[StageObservation, ...] = field(default_factory=tuple)
    # Requests pending or arriving in front of the engines (a gateway's or activator's count: the policy's
    # scaleFromZero.query), the one demand signal there is at 0 replicas. Read only with scaleFromZero.
    front_door: Measured = MISSING
    # The span the source took the rates and histograms over (its rate window: `--rate-window`).
    rate_window_seconds: float = DEFAULT_RATE_WINDOW_SECONDS

    def rate_window(self) -> float:
        """`rate_window_seconds` when it is a real span (finite, > 0), else the default minute."""
        w = self.rate_window_seconds
        return w if 0.0 < w < math.inf else DEFAULT_RATE_WINDOW_SECONDS
