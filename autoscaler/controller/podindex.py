"""Pods by namespace and by label, so selecting one target's pods does not scan its whole namespace.

`PodIndex.select` matches the selector against every pod of the namespace: with 10,000 policies in 50
namespaces that is 4 million label matches per tick, most of a quiet tick's CPU. Here a selector's
equality terms (`app=x`) first narrow the candidates to the pods carrying that label; the full selector
is then applied to those, so the answer (and its order) is the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from autoscaler.observe import PodIndex
from autoscaler.observe.selector import LabelSelector

Pod = Any


def _equalities(selector: str) -> list[tuple[str, str]]:
    """The `key=value` / `key==value` terms of a selector string (set-based terms are skipped)."""
    out, depth, term = [], 0, ""
    for ch in selector + ",":
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            t = term.strip()
            if "=" in t and "!=" not in t and "(" not in t:
                k, _, v = t.partition("==") if "==" in t else t.partition("=")
                out.append((k.strip(), v.strip()))
            term = ""
        else:
            term += ch
    return out


class LabelPodIndex(PodIndex):
    def __init__(self, pods: Iterable[Pod]):
        pods = list(pods)
        super().__init__(pods)
        self.by_label: dict[tuple[str, str, str], list[Pod]] = {}
        for p in pods:
            meta = p.get("metadata") or {}
            ns = meta.get("namespace", "")
            for k, v in (meta.get("labels") or {}).items():
                self.by_label.setdefault((ns, k, str(v)), []).append(p)

    def select(self, namespace: str, selector: str | None) -> list[Pod]:
        if not selector:
            return []
        buckets = [self.by_label.get((namespace, k, v), []) for k, v in _equalities(selector)]
        if not buckets:
            return super().select(namespace, selector)
        candidates = min(buckets, key=len)
        sel = LabelSelector(selector)
        return [p for p in candidates if sel.matches((p.get("metadata") or {}).get("labels"))]
