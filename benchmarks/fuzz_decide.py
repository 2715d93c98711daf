"""Fuzz the decision core with seeded random decide sequences (issue 11's "Done when", full size).

Each case is one random valid policy (extreme but valid values) driven through a sequence of ticks whose
signals are fresh, stale, absent, NaN, infinite, negative or absurdly large, whose clock steps forward,
stands still, goes backwards and jumps by hours or days, and whose state is restarted (serialised through
CoreState.to_dict/JSON/from_dict, or lost) along the way. Checked on every call:
- no exception escapes `decide`, and no call takes 1 s or more of CPU time (this process's, so a shared,
  oversubscribed machine does not count its waits; wall time is reported too, and 10 s of it is a hang);
- the desired count is None only when the target (or the clock) is unknown, else within [min, max];
- never a scale-down on data the decision cannot trust: when the fuzzer made a demand signal (token or
  request rates, waiting) stale, absent or implausible, or a KV reading stale or implausible, or when the
  decision itself lists missing signals, the count does not go below min(current, replicas.max);
- the state serialises to strict JSON (what a Kubernetes status can hold) and restores.

    python benchmarks/fuzz_decide.py [--cases 10000] [--seed 1]

The unit suite runs the same fuzzer at a smaller size (tests/unit/core/test_decide_fuzz.py).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoscaler.cli.params import arg_count
from autoscaler.core import (
    STAGES,
    ClusterFacts,
    CoreState,
    Measured,
    ReplicaCounts,
    Signals,
    StageObservation,
    StartingReplica,
    decide,
    forecast_config,
)
from autoscaler.core.signals import LatencyHistogram
from autoscaler.policy import (
    DAY,
    HOUR,
    MAX_FORECAST_HISTORY_STEPS,
    MAX_REPLICAS,
    MAX_STAGE_SECONDS,
    MIN_FORECAST_HISTORY_STEPS,
    PolicySpec,
)

EPOCH = 1_767_225_600.0  # 2026-01-01 00:00 UTC
WEEK = 7 * 86400.0
SLOW_SECONDS = 1.0  # CPU seconds per call
HANG_SECONDS = 10.0  # wall seconds per call
LOAD_FIELDS = ("request_rate", "prompt_tokens_rate", "generation_tokens_rate", "running", "waiting",
               "kv_cache_usage", "queue_time_p90_seconds", "ttft_p90_seconds")
# Signals whose staleness, absence or garbage must block a scale-down whatever the policy.
DEMAND_FIELDS = ("request_rate", "prompt_tokens_rate", "generation_tokens_rate", "waiting")


def _pick(rng: random.Random, *options: Any) -> Any:
    return options[rng.randrange(len(options))]


def _seconds(rng: random.Random, lo: float = 0.0, hi: float = DAY) -> float:
    """A duration, often ordinary, sometimes at or near the ends of its valid range."""
    return float(_pick(rng, rng.uniform(lo, min(hi, 600.0)), rng.uniform(lo, hi), lo if lo > 0 else 1e-3, hi))


def random_policy(rng: random.Random) -> PolicySpec:
    """A policy that validates, with fields drawn across their whole meaningful range (seconds up to a
    week, percents up to 1000, forecast steps ≥ 1 s with a few steps of history at least)."""
    lo = rng.randint(0, 20)
    top = max(1, lo, _pick(rng, rng.randint(lo, 60), 1000, MAX_REPLICAS))
    step = _pick(rng, 60.0, rng.uniform(1.0, HOUR), 1.0, HOUR)
    h_lo = max(60.0, MIN_FORECAST_HISTORY_STEPS * step * (1 + 1e-9))
    h_hi = min(5 * WEEK, MAX_FORECAST_HISTORY_STEPS * step)
    windows = [{"days": rng.sample(["mon", "tue", "wed", "thu", "fri", "sat", "sun"], rng.randint(1, 7)),
                "start": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
                "end": f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
                "minReplicas": rng.randint(0, top),
                "timezone": _pick(rng, "UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata")}
               for _ in range(rng.randint(0, 2))]
    action = _pick(rng, {"action": "hold"}, {"action": "floor"}, {"action": "fixed", "replicas": rng.randint(0, top)})
    slo: dict[str, Any] = _pick(rng, {"ttftSeconds": _seconds(rng, 0.01, 600)},
                                {"queueTimeSeconds": _seconds(rng, 0.01, 600)},
                                {"ttftSeconds": _seconds(rng, 0.01, 600), "queueTimeSeconds": _seconds(rng, 0.01, 600)})
    slo["quantile"] = _pick(rng, 0.99, 0.5, 0.999999, rng.uniform(0.01, 0.99))
    fb_min = _pick(rng, 0.8, 1e-6, 1.0)
    spec = {
        "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "m"},
        "model": {"name": "m"},
        "metrics": {"stalenessSeconds": _seconds(rng, 1.0, 3600.0)},
        "slo": slo,
        "capacity": {
            "promptTokensPerSecond": _pick(rng, 15000.0, 1.0, 1e8, rng.uniform(100, 1e6)),
            "generationTokensPerSecond": _pick(rng, 2500.0, 1.0, 1e8, rng.uniform(10, 1e5)),
            "maxConcurrency": _pick(rng, None, 1, rng.randint(1, 512), 1_000_000),
            "targetUtilization": _pick(rng, 0.75, 1.0, 1e-3, rng.uniform(0.05, 1.0)),
            "learn": rng.random() < 0.7,
            "learnMinFactor": _pick(rng, 0.5, 1e-3, 1.0),
            "learnMaxFactor": _pick(rng, 2.0, 1.0, 100.0),
            "sloFeedback": {"enabled": rng.random() < 0.8, "min": fb_min, "max": _pick(rng, 3.0, 10.0, 1.0),
                            "relaxSeconds": _seconds(rng, 1.0), "minRequests": _pick(rng, 20, 1, 1_000_000)},
        },
        "replicas": {"min": lo, "max": top, "floorSchedule": [w for w in windows if w["minReplicas"] <= top]},
        "forecast": {"enabled": rng.random() < 0.6, "method": _pick(rng, "auto", "holt", "seasonal", "last",
                                                                    "seasonal-naive"),
                     "quantile": _pick(rng, 0.9, 0.5, 0.999), "stepSeconds": step,
                     "historySeconds": min(h_hi, max(h_lo, _pick(rng, 14 * 86400.0, h_lo, rng.uniform(h_lo, h_hi)))),
                     "refitEverySeconds": _seconds(rng, 60.0, WEEK)},
        "coldStart": {**{f"{stage}Seconds": _seconds(rng, 0.0, MAX_STAGE_SECONDS)
                         for stage in ("scheduling", "nodeProvisioning", "imagePull", "weightLoad", "warmup")},
                      "spread": _pick(rng, 0.3, 0.0, 1.0),
                      "learn": rng.random() < 0.7, "quantile": _pick(rng, 0.9, 0.5, 0.999),
                      "unschedulableLimitSeconds": _seconds(rng, 1.0)},
        "scaleUp": {"maxStepReplicas": _pick(rng, 8, 1, 1000), "maxStepPercent": _pick(rng, 100.0, 1e-3, 1000.0),
                    "periodSeconds": _seconds(rng, 1.0), "backlogDrainSeconds": _seconds(rng, 1.0),
                    "panic": {"enabled": rng.random() < 0.8, "queueTimeRatio": _pick(rng, 1.0, 1e-3, 100.0),
                              "holdSeconds": _seconds(rng, 1.0), "maxStepPercent": _pick(rng, 400.0, 1e-3, 1000.0)}},
        "scaleDown": {"stabilizationWindowSeconds": _pick(rng, None, _seconds(rng, 1.0), 1.0),
                      "maxStepReplicas": _pick(rng, 1, 1000), "maxStepPercent": _pick(rng, 50.0, 1e-3, 100.0),
                      "periodSeconds": _seconds(rng, 1.0)},
        "onMissingMetrics": action,
        "intervalSeconds": _pick(rng, 15.0, 1.0, rng.uniform(1.0, 3600.0)),
    }
    if lo == 0 and rng.random() < 0.5:
        spec["scaleFromZero"] = {"query": "sum(gateway_pending)", "replicas": rng.randint(1, top),
                                 "threshold": _pick(rng, 0.0, 0.0, 1e6, rng.uniform(0, 5)),
                                 "idleSeconds": _seconds(rng, 60.0)}
    return PolicySpec.model_validate(spec)


GARBAGE = (float("nan"), float("inf"), float("-inf"), -1.0, -1e-9, 1e308, 1e7, 2.0)
BAD_AGES = (float("nan"), -1.0, float("inf"), -float("inf"))


def _measured(rng: random.Random, typical: float, staleness: float) -> tuple[Measured, str]:
    """A reading and what the fuzzer made of it: 'fresh', 'stale', 'absent' or 'garbage' (a fresh value
    that may be implausible: the core decides; it only counts as trusted if within the core's bounds)."""
    x = rng.random()
    if x < 0.75:
        return Measured(typical, rng.uniform(0.0, staleness)), "fresh"
    if x < 0.83:
        return Measured(typical, _pick(rng, staleness * 1.01 + 1.0, rng.uniform(staleness, 1e7), *BAD_AGES)), "stale"
    if x < 0.9:
        return Measured(), "absent"
    return Measured(_pick(rng, *GARBAGE), rng.uniform(0.0, staleness)), "garbage"


def random_signals(rng: random.Random, pol: PolicySpec, current: int, load: float) -> tuple[Signals, set[str]]:
    """Signals for one tick, and the names of the load signals the fuzzer did not deliver fresh and sane."""
    stale = pol.metrics.staleness_seconds
    per = pol.capacity
    typical = {
        "request_rate": load * 5.0,
        "prompt_tokens_rate": load * per.prompt_tokens_per_second * rng.uniform(0.0, 0.8),
        "generation_tokens_rate": load * per.generation_tokens_per_second * rng.uniform(0.0, 0.2),
        "running": load * rng.uniform(0, 64),
        "waiting": _pick(rng, 0.0, 0.0, rng.uniform(0, 50), rng.uniform(0, 5000)),
        "kv_cache_usage": rng.uniform(0.0, 1.0),
        "queue_time_p90_seconds": rng.expovariate(1.0),
        "ttft_p90_seconds": rng.expovariate(0.5),
    }
    if load == 0.0:  # an idle model: every engine reports nothing
        typical = dict.fromkeys(typical, 0.0)
    typical["front_door"] = _pick(rng, 0.0, 0.0, load * 10.0, rng.uniform(0, 1e4))
    values: dict[str, Measured] = {}
    bad: set[str] = set()
    clean = load == 0.0 and rng.random() < 0.9  # an idle stretch that reads clean, so idleness can be proven
    for name in (*LOAD_FIELDS, "front_door"):
        m, kind = _measured(rng, min(typical[name], 1e6 if name in ("running", "waiting") else 1e9), stale)
        if clean:
            m, kind = Measured(typical[name], rng.uniform(0.0, stale)), "fresh"
        values[name] = m
        if kind != "fresh":
            bad.add(f"{name}:{kind}")
    hist = None
    if rng.random() < 0.5:
        total = _pick(rng, 0.0, 100.0, 1e6, float("nan"), float("inf"), -5.0)
        hist = LatencyHistogram((0.5, 1.0, 2.5, float("inf")), (0.3 * total, 0.8 * total, 0.95 * total, total),
                                _pick(rng, 1.0, stale * 2, float("nan")))
    starting = tuple(
        StartingReplica(_pick(rng, *STAGES), _pick(rng, rng.uniform(0, 3600), float("nan"), -5.0, 1e12),
                        rng.uniform(0, 600), rng.random() < 0.2)
        for _ in range(_pick(rng, 0, 0, 1, rng.randint(0, 20))))
    if clean:  # and a settled fleet: nothing starting
        starting = ()
    ready = current if clean else max(0, current - rng.randint(0, 5))
    replicas: ReplicaCounts | None = ReplicaCounts(
        desired=current, ready=ready, starting=starting, terminating=rng.randint(0, 3),
        age_seconds=_pick(rng, 0.0, 0.0, 0.0, rng.uniform(0, 2 * stale), float("nan")))
    if rng.random() < 0.02:
        replicas = None
    obs = tuple(StageObservation(_pick(rng, *STAGES), _pick(rng, rng.uniform(0, 900), float("nan"), -1.0, 1e308),
                                 _pick(rng, "default", "cached", "uncached"))
                for _ in range(_pick(rng, 0, 0, 0, rng.randint(1, 5))))
    cluster = ClusterFacts(_pick(rng, None, 0, rng.randint(0, 50), -3), _pick(rng, None, True, False))
    sig = Signals(request_rate=values["request_rate"], prompt_tokens_rate=values["prompt_tokens_rate"],
                  generation_tokens_rate=values["generation_tokens_rate"], running=values["running"],
                  waiting=values["waiting"], kv_cache_usage=values["kv_cache_usage"],
                  queue_time_p90_seconds=values["queue_time_p90_seconds"],
                  ttft_p90_seconds=values["ttft_p90_seconds"], ttft_histogram=hist,
                  queue_time_histogram=hist if rng.random() < 0.5 else None, replicas=replicas, cluster=cluster,
                  observations=obs, front_door=values["front_door"])
    return sig, bad


def _insane(v: float | None, top: float) -> bool:
    """Garbage under any reasonable plausibility rule (the fuzzer's own, independent of the core's table)."""
    return v is None or not math.isfinite(v) or v < 0 or v >= 1e300 or v > top


def _blocks_scale_down(bad: set[str], sig: Signals) -> bool:
    """Whether the fuzzer's own record says this tick's data may not justify a scale-down."""
    for entry in bad:
        name, kind = entry.split(":")
        if name in DEMAND_FIELDS or name == "kv_cache_usage":
            if kind == "stale":
                return True
            top = 1.0 + 1e-6 if name == "kv_cache_usage" else math.inf
            if kind == "absent" and name != "kv_cache_usage":
                return True
            if kind == "garbage" and _insane(getattr(sig, name).value, top):
                return True
    return False


def _next_time(rng: random.Random, t: float, interval: float) -> float:
    x = rng.random()
    if x < 0.8:
        return t + interval
    if x < 0.85:
        return t  # the same instant twice
    if x < 0.92:
        return t - _pick(rng, rng.uniform(0, 60), rng.uniform(0, 86400), interval)  # backwards
    return t + _pick(rng, rng.uniform(0, 3600), rng.uniform(0, 5 * 86400), rng.uniform(0, 40 * 86400))  # gaps


@dataclass
class FuzzReport:
    cases: int = 0
    calls: int = 0
    rejected_policies: int = 0
    restarts: int = 0
    clock_backwards: int = 0
    stale_ticks: int = 0
    to_zero: int = 0  # scaleFromZero: scale-downs to 0 (each checked against the idleness it needs)
    from_zero: int = 0  # and wakes from 0
    max_seconds: float = 0.0  # CPU
    max_wall_seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def fail(self, msg: str) -> None:
        if len(self.failures) < 20:
            self.failures.append(msg)
        else:
            self.failures[-1] = f"... and more (last: {msg})"


def run_case(rng: random.Random, report: FuzzReport, case: int) -> None:
    try:
        pol = random_policy(rng)
    except ValueError:  # pydantic's ValidationError is a ValueError: an invalid combination, draw again
        report.rejected_policies += 1
        return
    report.cases += 1
    fcfg = forecast_config(pol)
    state = CoreState()
    t = EPOCH + rng.uniform(-WEEK, WEEK)
    current = rng.randint(0, max(pol.replicas.max * 2, 3))
    load = rng.uniform(0, 30) if rng.random() < 0.8 else 0.0
    for tick in range(rng.randint(8, 40)):
        sig, bad = random_signals(rng, pol, current, load)
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            result = decide(pol, sig, state, t, fcfg if rng.random() < 0.8 else None)
        except Exception:  # the point is to catch anything
            report.fail(f"case {case} tick {tick}: {traceback.format_exc(limit=3)}")
            return
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        report.calls += 1
        report.max_seconds = max(report.max_seconds, cpu)
        report.max_wall_seconds = max(report.max_wall_seconds, wall)
        if cpu >= SLOW_SECONDS or wall >= HANG_SECONDS:
            report.fail(f"case {case} tick {tick}: decide took {cpu:.2f} s CPU, {wall:.2f} s wall")
        d = result.decision
        known_target = sig.replicas is not None and sig.replicas.age_seconds == sig.replicas.age_seconds and (
            0 <= sig.replicas.age_seconds <= pol.metrics.staleness_seconds)
        if d.desired_replicas is None:
            if known_target:
                report.fail(f"case {case} tick {tick}: nothing decided for a known target")
        else:
            if not pol.replicas.min <= d.desired_replicas <= pol.replicas.max:
                report.fail(f"case {case} tick {tick}: {d.desired_replicas} outside "
                            f"[{pol.replicas.min}, {pol.replicas.max}]")
            untrusted = _blocks_scale_down(bad, sig) or bool(d.missing_signals) or not d.metrics_fresh
            z = pol.scale_from_zero
            report.from_zero += current == 0 < d.desired_replicas and z is not None
            if d.desired_replicas == 0 < current and z is not None:
                report.to_zero += 1
                # back to 0 only on a tick that proves idleness: nothing the fuzzer spoiled, nothing in front
                spoiled = sorted(b for b in bad if b.split(":")[0] in (*DEMAND_FIELDS, "running", "front_door"))
                front = sig.front_door.value
                if spoiled or front is None or front > z.threshold:
                    report.fail(f"case {case} tick {tick}: to 0 from {current} on {spoiled}, gateway {front}")
            if untrusted:
                report.stale_ticks += 1
                if d.desired_replicas < min(current, pol.replicas.max):
                    report.fail(f"case {case} tick {tick}: scale-down {current} -> {d.desired_replicas} on "
                                f"untrusted data {sorted(bad)} ({d.message})")
        state = result.state
        try:
            blob = json.dumps(state.to_dict(), allow_nan=False)
        except (TypeError, ValueError) as e:
            report.fail(f"case {case} tick {tick}: state is not strict JSON: {e}")
            return
        x = rng.random()
        if x < 0.1:
            state = CoreState.from_dict(json.loads(blob))  # a restart that kept its status
            report.restarts += 1
        elif x < 0.13:
            state = CoreState()  # a restart that lost it
            report.restarts += 1
        if d.desired_replicas is not None and rng.random() < 0.85:
            current = d.desired_replicas
        elif rng.random() < 0.5:
            current = rng.randint(0, pol.replicas.max + 5)
        nt = _next_time(rng, t, pol.interval_seconds)
        report.clock_backwards += nt < t
        t = nt
        idle = load == 0.0 and rng.random() < 0.8  # an idle model mostly stays idle
        load = 0.0 if idle else max(0.0, load * rng.uniform(0.5, 1.6) + rng.uniform(-1, 1))


def fuzz(cases: int, seed: int) -> FuzzReport:
    rng = random.Random(seed)
    report = FuzzReport()
    case = 0
    while report.cases < cases:
        run_case(rng, report, case)
        case += 1
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=arg_count(1, 100_000_000), default=10_000)
    ap.add_argument("--seed", type=arg_count(0, 2**32 - 1), default=1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    r = fuzz(args.cases, args.seed)
    wall = time.perf_counter() - t0
    print(f"decide sequences: {r.cases} (seed {args.seed}), decide calls: {r.calls}, policies redrawn: "
          f"{r.rejected_policies}, restarts: {r.restarts}, clock steps backwards: {r.clock_backwards}, "
          f"ticks on untrusted data: {r.stale_ticks}, scaleFromZero: {r.to_zero} to 0, {r.from_zero} from 0")
    print(f"slowest decide: {r.max_seconds * 1000:.0f} ms CPU (limit {SLOW_SECONDS:.0f} s), "
          f"{r.max_wall_seconds * 1000:.0f} ms wall (hang limit {HANG_SECONDS:.0f} s); run: {wall:.0f} s wall")
    print(f"failures: {len(r.failures)}")
    for f in r.failures:
        print(" -", f)
    sys.exit(1 if r.failures else 0)


if __name__ == "__main__":
    main()
