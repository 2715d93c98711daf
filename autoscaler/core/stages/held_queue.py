"""Held queue: a backlog the engines already hold is not drained by more replicas.

vLLM queues a request in the engine the router sent it to on arrival (a Kubernetes Service, a
join-the-shortest-queue router, the inference gateway's endpoint picker); nothing moves it to a replica
that becomes ready later. A backlog built while replicas were starting (a step burst on a small fleet)
therefore drains only through the replicas holding it, at their own pace, while the new replicas take the
new arrivals. Replicas ordered "to drain the backlog", or held by a queue time those held requests report
as they finish, sit idle (docs/benchmarks.md, decision change P).

The evidence, with nothing starting: a real backlog (at least the SLO's queue budget of the fleet's
service) that shrank this tick, a KV cache short of full, and a fleet serving under HELD_SHARE of what its
ready replicas drain at their measured pace. A queue every replica can take from keeps them all busy
and never looks like that. Once seen, the episode lasts while the backlog stands (or the queue time its
requests report as they finish lags behind it) and no new backlog grows: a growth confirmed over two ticks
into a real backlog. A handful of sequences joining a queue of a handful is the noise vLLM always shows (a
request waits until its first engine step), not a rise: read as one, it ended the episode while the held
requests still reported their late queue time, and that lag then ordered the burst hedge and a panic for
a step that was over (flash-crowd, minute 69.5: 24 replicas started as the step ended; docs/benchmarks.md,
decision change T).

While it lasts, the replicas for the backlog (the reactive drain, the burst hedge) are capped at what the
fleet serves now (the arrivals and the holders' drain) at the planned load per replica, a queue time over
the SLO does not hold a scale-down, and the throughput served is no capacity sample (most replicas idle).
The service beside such a backlog is no throughput sample even while replicas are still starting
(`idle_beside_backlog`): with most replicas idle, served/ready says nothing of what one replica drains.
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.core.capacity import CapacityStats
from autoscaler.core.signals import ReplicaCounts
from autoscaler.core.stages.capacity import SATURATED_KV  # a full KV cache bounds the pace: no evidence then
from autoscaler.core.stages.demand import Demand
from autoscaler.core.stages.sizing import replicas_for
from autoscaler.policy import PolicySpec

# A fleet draining a backlog every replica can take from serves at its full pace; under this share of it,
# most replicas are idle beside the queue.
HELD_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class HeldQueue:
    active: bool
    cap: int  # replicas for what the fleet serves now; 0 when not active

    def explain(self) -> dict[str, float]:
        return {"held_queue_cap": self.cap} if self.active else {}


def backlog_stands(policy: PolicySpec, dm: Demand) -> bool:
    """A real backlog: at least the SLO's queue budget of the fleet's service is waiting."""
    return dm.waiting >= 1.0 and dm.backlog >= policy.slo.queue_budget_seconds * max(dm.served, 0.0)


def idle_beside_backlog(policy: PolicySpec, dm: Demand, ready: int, kv: float | None,
                        stats: CapacityStats) -> bool:
    """A real backlog that shrank this tick beside ready replicas serving under HELD_SHARE of what they drain
    at their measured pace (`stats.measured`, a factor of the prior), with the KV cache short of full: the
    queue is on some of the replicas only. Against the prior alone it is never judged: a replica slower
    than its prior on this token mix (azure-code's long prompts) looks just like that. The pace is read
    last, only on the rare tick that passes the rest."""
    if (kv is not None and kv >= SATURATED_KV) or ready <= 0 or not dm.growth < 0 or not backlog_stands(policy, dm):
        return False
    pace = stats.measured(policy.capacity)
    return pace is not None and dm.served < HELD_SHARE * ready * pace


def held_queue(policy: PolicySpec, dm: Demand, replicas: ReplicaCounts, kv: float | None, stats: CapacityStats,
               usable: float, queue_time_p90: float | None, previous: bool, trusted: bool) -> HeldQueue:
    """Whether the standing backlog is held by the engines that took it (see the module docstring).

    `stats`: what a ready replica was measured to drain a queue at (`idle_beside_backlog`); `usable`: the
    planned load per replica; `queue_time_p90`: the queue time reported (at finish, so it lags the queue);
    `previous`: whether the last tick saw the episode. The episode ends once a new backlog grows, the KV cache
    fills, or the backlog is gone and the queue time its requests report is back within the budget."""
    kv_full = kv is not None and kv >= SATURATED_KV
    # growth seen over two ticks (demand.confirmed) into a real backlog: a handful joining is no new rise
    growing = dm.offered > dm.served and backlog_stands(policy, dm)
    if not trusted or kv_full or growing or replicas.ready <= 0:
        return HeldQueue(False, 0)
    if previous:
        lagging = queue_time_p90 is not None and queue_time_p90 > policy.slo.queue_budget_seconds
        active = backlog_stands(policy, dm) or lagging
    else:
        active = not replicas.starting and idle_beside_backlog(policy, dm, replicas.ready, kv, stats)
    return HeldQueue(True, replicas_for(dm.served, usable)) if active else HeldQueue(False, 0)
