"""Leaving: replicas on nodes that are being cordoned or drained are going; replace them first.

A node hosting replicas of the target that is cordoned, or carries a NoSchedule/NoExecute taint the
replica pods do not tolerate, will lose those replicas (see autoscaler/observe/nodes.py, `leaving_reason`).
The fleet keeps what it needs this tick on the nodes that stay: desired = need + leaving, within
replicas.max, where `need` is the count this tick decided without the leaving replicas (at most the raw
recommendation: a count stabilization holds above what is needed already covers leaving replicas). The
surge is added after stabilization and the rate limits: the replacements are capacity the SLO already
needs, not new demand, so no window delays them. It never lowers the count, and it is not added while
replicas are stuck unschedulable (piling more pending pods on a full cluster helps nothing).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Surge:
    replicas: int  # the count after the surge: never below the count decided before it, never above max
    need: int  # what the fleet needs on nodes that stay (the SLO's count this tick)
    leaving: int
    added: int  # replicas added for the leaving ones

    def explain(self) -> dict[str, float]:
        return {"leaving": self.leaving, "leaving_need": self.need, "leaving_surge": self.added} if self.leaving \
            else {}

    def message(self, top: int) -> str:
        if not self.leaving:
            return ""
        if not self.added:
            return f"; {self.leaving} replica(s) on leaving nodes, covered without a surge"
        capped = " (capped at replicas.max)" if self.replicas == top and self.need + self.leaving > top else ""
        return f"; surge +{self.added} for {self.leaving} replica(s) on leaving nodes{capped}"


def surge(desired: int, recommended: int, leaving: int, top: int, stuck: int = 0) -> Surge:
    """`desired`: the count decided this tick without the leaving replicas (after stabilization, rate limits
    and bounds); `recommended`: the raw recommendation. Negative or absent leaving counts as none."""
    leaving = max(0, leaving)
    if not leaving or stuck:
        return Surge(desired, desired, leaving, 0)
    need = min(desired, recommended)
    target = max(desired, min(top, need + leaving))
    return Surge(target, need, leaving, target - desired)
