"""Label selectors in their string form (`a=b,c!=d,e in (x,y),f notin (z),g,!h`), as `/scale` reports them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

_Req = Callable[[Mapping[str, str]], bool]
_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _requirement(term: str) -> _Req:
    m = _SET.match(term)
    if m:
        key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in term:
            key, value = (s.strip() for s in term.split(op, 1))
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = term[1:].strip()
        return lambda labels: key not in labels
    return lambda labels: term in labels


class LabelSelector:
    """A parsed selector. The empty selector matches everything (as in Kubernetes)."""

    def __init__(self, text: str):
        self.text = text
        self._reqs = [_requirement(t) for t in _split(text)]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r(labels) for r in self._reqs)
