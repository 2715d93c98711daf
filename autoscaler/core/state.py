"""The decision core's memory between ticks: small, immutable, serializable.

The controller persists `to_dict()` (a few KB to ~15 KB) in the policy's status, so a restart loses nothing
it needs: the forecaster's history is kept compactly (see forecast_seed.py) and refitted on restore.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from autoscaler.core.capacity import CapacityStats
from autoscaler.core.coldstart import ColdStartStats
from autoscaler.core.engine_knee import EngineKnee
from autoscaler.core.forecast_seed import ForecastSeed
from autoscaler.core.numbers import finite_number
from autoscaler.core.slo_budget import SloBudget
from autoscaler.core.slo_capacity import SloCapacity
from autoscaler.core.waking import Waking
from forecasting import ForecastState

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CoreState:
    # (time, raw recommendation) inside the scale-down stabilization window, oldest first.
    recommendations: tuple[tuple[float, int], ...] = ()
    # (time, decided replicas) inside the longest rate-limit period, oldest first.
    decisions: tuple[tuple[float, int], ...] = ()
    panic_until: float | None = None
    forecast: ForecastState | None = None
    forecast_step_seconds: float | None = None  # the bucket width `forecast` was built with
    forecast_seed: ForecastSeed | None = None  # restored history, rebuilt into `forecast` at the next tick
    coldstart: ColdStartStats = field(default_factory=ColdStartStats)
    capacity: CapacityStats = field(default_factory=CapacityStats)
    slo_capacity: SloCapacity = field(default_factory=SloCapacity)  # windows and misses per load bin
    engine_knee: EngineKnee = field(default_factory=EngineKnee)  # the engine's batch and latency per load bin
    # (time, waiting sequences) read over the last rate window and one tick, oldest first (stages/demand.py).
    recent_waiting: tuple[tuple[float, float], ...] = ()
    last_growth: float = 0.0  # queue growth (sequences/s) seen at the previous tick
    load_factor: float = 1.0  # SLO feedback on the load planned per replica (>1: less load, <1: more)
    slo_budget: SloBudget = field(default_factory=SloBudget)  # every window's requests and misses, faded
    settled_since: float | None = None  # since when nothing has been starting and no queue waited
    # Since the fleet last settled, a load past the SLO feedback's reach was seen (stages/capacity.py).
    beyond_headroom: bool = False
    held_queue: bool = False  # the standing backlog is held by the engines that took it (stages/held_queue.py)
    steady_since: float | None = None  # since when nothing has been starting and the fleet was at its size
    work_per_request: float | None = None  # EMA, replica-seconds per request
    last_tick: float | None = None
    # Since when every engine and the gateway have reported no request (scaleFromZero; stages/zero.py).
    idle_since: float | None = None
    waking: Waking | None = None  # a wake from zero in progress (stages/zero.py)
    # (time, replicas) the burst stage ordered, kept for one cold start after they are up (stages/burst.py).
    burst_held: tuple[tuple[float, int], ...] = ()
    # (bucket index, horizon in buckets, quantile, forecast): the forecast changes only when a bucket closes,
    # so ticks inside one bucket reuse it instead of paying for predict() again.
    forecast_cache: tuple[int, int, float, float] | None = None
    # (history end index, horizon in buckets, quantile, headroom): the burst hedge, recomputed per bucket.
    hedge_cache: tuple[int, int, float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "recommendations": [[round(t, 3), r] for t, r in self.recommendations],
            "decisions": [[round(t, 3), r] for t, r in self.decisions],
            "panicUntil": self.panic_until,
            "forecast": self._seed_dict(),
            "coldStart": self.coldstart.to_dict(),
            "capacity": [round(x, 4) for x in self.capacity.samples],
            "sloCapacity": self.slo_capacity.to_list(),
            "sloMissFleet": self.slo_capacity.fleet_to_list(),
            "sloMissEpisodes": self.slo_capacity.episodes_to_list(),
            "engineKnee": self.engine_knee.to_dict(),
            "sloBudget": self.slo_budget.to_list(),
            "recentWaiting": [[round(t, 3), round(w, 3)] for t, w in self.recent_waiting],
            "lastGrowth": round(self.last_growth, 4),
            "loadFactor": round(self.load_factor, 4),
            "settledSince": self.settled_since,
            "beyondHeadroom": self.beyond_headroom,
            "heldQueue": self.held_queue,
            "steadySince": self.steady_since,
            "workPerRequest": self.work_per_request,
            "lastTick": self.last_tick,
            "burstHeld": [[round(t, 3), r] for t, r in self.burst_held],
            "idleSince": self.idle_since,
            "waking": self.waking.to_list() if self.waking is not None else None,
        }

    def _seed_dict(self) -> dict[str, Any] | None:
        seed = self.forecast_seed
        if self.forecast is not None and self.forecast_step_seconds is not None:
            seed = ForecastSeed.of(self.forecast, self.forecast_step_seconds)
        return seed.to_dict() if seed is not None else None

    @staticmethod
    def from_dict(d: dict[str, Any]) -> CoreState:
        """Rebuild from `to_dict()` output. An unreadable forecast history starts fresh (logged) rather
        than failing the loop: the reactive path and the floors do not need it. Anything else that is not
        what `to_dict()` writes raises ValueError naming the field, so the caller can discard the state."""
        if not isinstance(d, dict):
            raise ValueError(f"coreState: expected a mapping, got {type(d).__name__}")
        fc = d.get("forecast")
        seed = None
        if fc:
            try:
                seed = ForecastSeed.from_dict(fc)
            except (KeyError, ValueError, TypeError, OverflowError, zlib.error) as e:
                _log.warning("stored forecast history unreadable, starting it fresh: %s", e)
        return CoreState(
            recommendations=_read(d, "recommendations", _history),
            decisions=_read(d, "decisions", _history),
            panic_until=_read(d, "panicUntil", _optional),
            forecast_seed=seed,
            coldstart=_read(d, "coldStart", lambda v: ColdStartStats.from_dict(v or {})),
            capacity=_read(d, "capacity", lambda v: CapacityStats(tuple(_number(x) for x in v or ()))),
            slo_capacity=_slo_capacity(d),
            engine_knee=_read(d, "engineKnee", EngineKnee.from_dict),
            slo_budget=_read(d, "sloBudget", SloBudget.from_list),
            recent_waiting=_recent_waiting(d),
            last_growth=_read(d, "lastGrowth", lambda v: _number(v or 0.0)),
            load_factor=_positive(d.get("loadFactor"), 1.0),
            settled_since=_read(d, "settledSince", _optional),
            beyond_headroom=_read(d, "beyondHeadroom", _flag),
            held_queue=_read(d, "heldQueue", _flag),
            steady_since=_read(d, "steadySince", _optional),
            work_per_request=_read(d, "workPerRequest", _optional),
            last_tick=_read(d, "lastTick", _optional),
            idle_since=_read(d, "idleSince", _optional),
            waking=_read(d, "waking", _waking),
            burst_held=_read(d, "burstHeld", _history),
        )


_T = TypeVar("_T")


def _slo_capacity(d: dict[str, Any]) -> SloCapacity:
    """`sloCapacity` with the fleet that missed (`sloMissFleet`) and the bins' miss episodes (`sloMissEpisodes`)."""
    slo = _read(d, "sloCapacity", SloCapacity.from_list)
    slo = _read(d, "sloMissFleet", slo.with_fleet)
    return _read(d, "sloMissEpisodes", slo.with_episodes)


def _recent_waiting(d: dict[str, Any]) -> tuple[tuple[float, float], ...]:
    """`recentWaiting`, or the one sample a state written before it kept (`lastWaiting`)."""
    if "recentWaiting" not in d and d.get("lastWaiting"):
        return (_read(d, "lastWaiting", lambda v: (_number(v[0]), _number(v[1]))),)
    return _read(d, "recentWaiting", lambda v: tuple((_number(t), _number(w)) for t, w in v or ()))


def _read(d: dict[str, Any], key: str, reader: Callable[[Any], _T]) -> _T:
    try:
        return reader(d.get(key))
    except (TypeError, ValueError, OverflowError, AttributeError, IndexError, KeyError) as e:
        raise ValueError(f"coreState.{key}: unreadable ({e}); discard the stored state") from e


def _number(value: Any) -> float:
    """A finite number (bools and strings are not numbers here)."""
    if not finite_number(value):
        raise ValueError(f"expected a finite number, got {value!r:.40}")
    return float(value)


def _optional(value: Any) -> float | None:
    return None if value is None else _number(value)


def _waking(value: Any) -> Waking | None:
    """A stored wake, [at, count, rate, readyAt, drainedAt] (absent: none)."""
    if value is None:
        return None
    at, count, rate, ready_at, drained_at = value
    rate = _optional(rate)
    return Waking(_number(at), max(0.0, _number(count)), None if rate is None else max(0.0, rate),
                  _optional(ready_at), _optional(drained_at))


def _flag(value: Any) -> bool:
    """A stored true/false (absent: false, as a state written before the field existed)."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {type(value).__name__}")
    return value


def _history(value: Any) -> tuple[tuple[float, int], ...]:
    """(time, replicas) pairs, oldest first, replicas a whole number ≥ 0."""
    pairs = []
    for t, r in value or ():
        n = _number(r)
        if n < 0 or n != int(n):
            raise ValueError(f"replicas must be a whole number ≥ 0, got {r}")
        pairs.append((_number(t), int(n)))
    return tuple(sorted(pairs))


def _positive(value: Any, default: float) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return default
    return v if 0 < v < float("inf") else default
