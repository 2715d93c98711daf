"""Fuzz ModelScalingPolicy documents: nothing a user can write may crash, hang or reach the runtime unbounded.

Each case starts from a valid policy, sets 1-4 fields (picked from every field the CRD schema knows) to a
value drawn from extremes (0, negative, 1e-6, 1e308, inf, nan, 10**400, huge and odd strings, wrong
types, directory-like time zones) or from the field's own valid range (its bounds, the midpoint, random),
and sometimes damages the YAML text itself (duplicate keys, aliases, tags, unquoted times, truncation).
Then:
- `load_policies_text` either accepts it or raises PolicyError whose every problem names its field
  (a path, or for YAML-level problems a line);
- an accepted policy runs through `decide` for a few ticks with fresh, stale and extreme signals;
- nothing raises anything else, and no case takes longer than 1 s.

Run: `python benchmarks/fuzz_policy.py [--cases 10000] [--seed 11]`. The test suite runs a smaller count.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from autoscaler.cli.params import arg_count
from autoscaler.core import ClusterFacts, CoreState, Measured, ReplicaCounts, Signals, decide, forecast_config
from autoscaler.crd import spec_schema
from autoscaler.policy_loader import PolicyError, load_policies_text

HANG_SECONDS = 1.0
BASE_FILE = Path(__file__).resolve().parents[1] / "policies" / "chat-deployment.yaml"

EXTREMES: list[Any] = [
    0, -1, 1, 1e-6, 0.0002, 1e308, -1e308, 1.7e308, float("inf"), float("-inf"), float("nan"), 10**400,
    2**63, True, None, "", "x" * 300, "America", "A" * 300, "../../etc/passwd", "Europe/Berlin", "18:30",
    "24:00", "2024-02-30", "\u0000", "💥", [], [1, 2], {}, {"a": 1}, 0.5, 0.999999, 1.0, 59.999, 86401,
]


def _fields(schema: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    out = [(path, schema)] if path else []
    for name, sub in (schema.get("properties") or {}).items():
        out.extend(_fields(sub, (*path, name)))
    items = schema.get("items")
    if isinstance(items, dict) and items.get("properties"):
        out.extend(_fields(items, (*path, "0")))
    return out


def _valid_value(rng: random.Random, node: dict[str, Any]) -> Any:
    t = node.get("type")
    if "enum" in node:
        return rng.choice(node["enum"])
    if t in ("number", "integer"):
        lo, hi = float(node.get("minimum", -1e6)), float(node.get("maximum", 1e6))
        pick = rng.choice(["lo", "hi", "mid", "rand", "rand"])
        v = {"lo": lo, "hi": hi, "mid": (lo + hi) / 2}.get(pick, rng.uniform(lo, hi))
        if node.get("exclusiveMinimum") and v <= lo:
            v = lo + (1 if t == "integer" else 1e-3)
        if node.get("exclusiveMaximum") and v >= hi:
            v = hi - (1 if t == "integer" else 1e-3)
        return int(v) if t == "integer" else v
    if t == "boolean":
        return rng.random() < 0.5
    if t == "string":
        return rng.choice(["Europe/Berlin", "UTC", "08:00", "23:59", "m", "apps/v1"])
    return rng.choice(EXTREMES)


def _set(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node: Any = doc
    for part in path[:-1]:
        if part == "0":
            if not isinstance(node, list) or not node:
                return
            node = node[0]
            continue
        nxt = node.get(part) if isinstance(node, dict) else None
        if not isinstance(nxt, dict | list):
            nxt = [{"start": "08:00", "end": "20:00", "minReplicas": 1}] if part == "floorSchedule" else {}
            if isinstance(node, dict):
                node[part] = nxt
        node = nxt
    if isinstance(node, dict):
        node[path[-1]] = value


def _damage_text(rng: random.Random, text: str) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return text.replace("max: 60", "max: 10\n    max: 5000")
    if kind == 1:
        return "x: &a [1, 1, 1, 1, 1, 1, 1, 1]\n" + text.replace("min: 1\n", "min: *a\n", 1)
    if kind == 2:
        return text.replace("max: 60", rng.choice(["max: !!int x", "max: !!timestamp x", "max: !!binary 60",
                                                   "max: !!python/object:os.system x", "max: !foo 1"]))
    if kind == 3:
        return text.replace('start: "08:00"', "start: 18:30")
    if kind == 4:
        cut = rng.randrange(len(text))
        return text[:cut] + rng.choice(["", "\t", ": :", "[", "{", "'", "- ", "\x00"]) + text[cut:]
    return text[: rng.randrange(len(text))]


SIGNALS = [
    Signals(request_rate=Measured(5.0, 1.0), prompt_tokens_rate=Measured(3e4, 1.0),
            generation_tokens_rate=Measured(5e4, 1.0), running=Measured(20.0, 1.0), waiting=Measured(300.0, 1.0),
            kv_cache_usage=Measured(0.9, 1.0), replicas=ReplicaCounts(3, 2), cluster=ClusterFacts(0, False)),
    Signals(replicas=ReplicaCounts(10000, 10000)),  # nothing measured: missing metrics
    Signals(request_rate=Measured(1e6, 1.0), prompt_tokens_rate=Measured(1e12, 1.0),
            generation_tokens_rate=Measured(1e12, 1.0), running=Measured(1e6, 1.0), waiting=Measured(1e9, 1.0),
            kv_cache_usage=Measured(1.0, 1.0), replicas=ReplicaCounts(0, 0), cluster=ClusterFacts(None, None)),
    Signals(request_rate=Measured(0.0, 1e9), prompt_tokens_rate=Measured(0.0, 1.0),
            generation_tokens_rate=Measured(0.0, 1.0), running=Measured(0.0, 1.0), waiting=Measured(0.0, 1.0),
            kv_cache_usage=Measured(0.0, 1.0), replicas=ReplicaCounts(1, 1)),
]


@dataclass
class Result:
    cases: int = 0
    accepted: int = 0
    rejected: int = 0
    uncaught: list[str] = field(default_factory=list)
    unnamed: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    stalls: list[str] = field(default_factory=list)  # over 1 s once, under it when run again (a busy machine)
    slowest_seconds: float = 0.0
    rejections_by_field: Counter[str] = field(default_factory=Counter)

    def ok(self) -> bool:
        return not (self.uncaught or self.unnamed or self.hangs)


def _case(rng: random.Random, base: dict[str, Any], fields: list[tuple[tuple[str, ...], dict[str, Any]]]) -> str:
    doc = copy.deepcopy(base)
    for _ in range(rng.randint(1, 4)):
        path, node = rng.choice(fields)
        value = rng.choice(EXTREMES) if rng.random() < 0.35 else _valid_value(rng, node)
        _set(doc["spec"], path, value)
    try:
        text = yaml.safe_dump(doc, sort_keys=False)
    except (yaml.YAMLError, ValueError, OverflowError):
        text = json.dumps(doc, default=str)  # JSON is YAML too
    if rng.random() < 0.15:
        text = _damage_text(rng, text)
    return text


def _decide_a_few_ticks(text: str) -> None:
    policy = load_policies_text(text)[0]
    spec = policy.spec
    cfg = forecast_config(spec)
    now = 1.7e9
    for sig in SIGNALS:
        state = CoreState()
        for i in range(3):
            state = decide(spec, sig, state, now + i * spec.interval_seconds, cfg).state
        decide(spec, sig, state, now - 3600, cfg)  # the clock going backwards


def _run_case(i: int, text: str, res: Result) -> None:
    try:
        _decide_a_few_ticks(text)
        res.accepted += 1
    except PolicyError as e:
        res.rejected += 1
        for p in e.problems:
            if not (p.path or p.line):
                res.unnamed.append(f"case {i}: {p}")
            res.rejections_by_field[p.path.split("[")[0] or "(yaml)"] += 1
    except Exception as e:
        res.uncaught.append(f"case {i}: {type(e).__name__}: {str(e)[:200]}\n{text[:2000]}")


def _seconds(text: str) -> float:
    t0 = time.perf_counter()
    with contextlib.suppress(Exception):  # counted by the first run
        _decide_a_few_ticks(text)
    return time.perf_counter() - t0


def fuzz(cases: int, seed: int) -> Result:
    rng = random.Random(seed)
    base = yaml.safe_load(BASE_FILE.read_text())
    fields = _fields(spec_schema())
    _seconds(BASE_FILE.read_text())  # one-time costs (imports, the time-zone list) are not a case's
    res = Result()
    for i in range(cases):
        text = _case(rng, base, fields)
        res.cases += 1
        t0 = time.perf_counter()
        _run_case(i, text, res)
        took = time.perf_counter() - t0
        if took > HANG_SECONDS:
            # Timed again: a case that is slow by itself is slow twice; a stalled machine rarely twice.
            again = _seconds(text)
            (res.hangs if again > HANG_SECONDS else res.stalls).append(f"case {i}: {took:.2f}s, then {again:.2f}s")
            took = min(took, again)
        res.slowest_seconds = max(res.slowest_seconds, took)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=arg_count(1, 100_000_000), default=10_000)
    ap.add_argument("--seed", type=arg_count(0, 2**32 - 1), default=11)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = fuzz(args.cases, args.seed)
    took = time.perf_counter() - t0
    print(f"policy documents: {res.cases} cases (seed {args.seed}) in {took:.1f}s")
    print(f"  accepted and decided: {res.accepted}; rejected: {res.rejected}")
    print(f"  uncaught exceptions: {len(res.uncaught)}; rejections without a field: {len(res.unnamed)}; "
          f"cases over {HANG_SECONDS:g}s: {len(res.hangs)} (plus {len(res.stalls)} only once: machine stalls); "
          f"slowest case: {res.slowest_seconds * 1000:.0f} ms")
    top = ", ".join(f"{k} {v}" for k, v in res.rejections_by_field.most_common(8))
    print(f"  most rejected fields: {top}")
    for line in (res.uncaught + res.unnamed + res.hangs)[:10]:
        print("  FAIL", line)
    for line in res.stalls[:10]:
        print("  stall", line)
    return 0 if res.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
