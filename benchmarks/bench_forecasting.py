"""Cost of the forecaster in the control loop: per-observation update, refit, predict.

Run: python benchmarks/bench_forecasting.py [--runs N]
Prints a table of medians over many runs against the targets (update < 50 us; refit of 14 days at
1-minute resolution, 20,160 points, < 200 ms; predict as the decision core calls it, once per closed
bucket with one quantile and a 5-15 min horizon, < 300 us so a 14-day replay's ~20k predictions stay
well inside its 60 s budget).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np
from rich.console import Console
from rich.table import Table

from autoscaler.cli.params import arg_count
from forecasting import ForecastConfig, ForecastState, from_history, observe, predict
from forecasting.online import _refit

STEP_SECONDS = 60.0
DAYS = 14
PREDICT_HORIZONS_SECONDS = (300.0, 600.0, 900.0)


def synthetic_demand(n: int, seed: int = 0) -> np.ndarray:
    """Per-minute demand with daily and weekly cycles, a slow trend and noise (tokens/s)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) * STEP_SECONDS
    daily = 300 * np.sin(2 * np.pi * t / 86400)
    weekend = np.where((t // 86400) % 7 >= 5, -200, 0)
    return np.maximum(0, 1000 + daily + weekend + 0.001 * t / 60 + rng.normal(0, 40, n))


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def warm_state(config: ForecastConfig, series: np.ndarray) -> ForecastState:
    return from_history(config, series)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=arg_count(4, 10_000_000), default=2000,
                        help="runs for the microsecond-scale rows")
    parser.add_argument("--refit-runs", type=arg_count(1, 100_000), default=15, help="runs for the refit rows")
    args = parser.parse_args()

    n = DAYS * 86400 // int(STEP_SECONDS)
    series = synthetic_demand(n + 1)
    rows: list[tuple[str, float, str, str]] = []

    for method in ("auto", "holt", "seasonal"):
        config = ForecastConfig(method=method, step_seconds=STEP_SECONDS)
        state = warm_state(config, series)  # 20,160 closed buckets + one open, fitted
        t_open = state.last_t_seconds
        within = median_seconds(partial(observe, config, state, t_open + 10.0, 1000.0), args.runs)
        closing = median_seconds(partial(observe, config, state, t_open + STEP_SECONDS, 1000.0), args.runs)
        refit = median_seconds(partial(_refit, config, state), args.refit_runs)
        cold_state = replace(state, holt=None, seasonal=None)  # no previous parameters to start from
        cold = median_seconds(partial(_refit, config, cold_state), args.refit_runs)
        pred = median_seconds(partial(predict, config, state, 3600.0, (0.5, 0.9)), args.runs // 4)
        rows.append((f"{method}: observe, same bucket", within * 1e6, "< 50 us", "yes" if within < 50e-6 else "NO"))
        rows.append(
            (f"{method}: observe, closes a bucket", closing * 1e6, "< 50 us", "yes" if closing < 50e-6 else "NO")
        )
        rows.append(
            (f"{method}: refit, {n:,} points (warm)", refit * 1e6, "< 200 ms", "yes" if refit < 0.2 else "NO")
        )
        rows.append(
            (f"{method}: refit, {n:,} points (cold)", cold * 1e6, "< 200 ms", "yes" if cold < 0.2 else "NO")
        )
        for horizon in PREDICT_HORIZONS_SECONDS:  # the decision core's call: one quantile, a few minutes ahead
            one = median_seconds(partial(predict, config, state, horizon, (0.9,)), args.runs // 2)
            chosen = predict(config, state, horizon, (0.9,)).method
            label = f"{method}: predict {horizon / 60:.0f} min, q=0.9 ({chosen})"
            rows.append((label, one * 1e6, "< 300 us", "yes" if one < 300e-6 else "NO"))
        rows.append((f"{method}: predict 1 h, q=(0.5, 0.9)", pred * 1e6, "-", ""))

    table = Table(
        title=f"forecasting cost (median; {platform.python_implementation()} {platform.python_version()})"
    )
    for name in ("operation", "median", "target", "met"):
        table.add_column(name, justify="left" if name == "operation" else "right")
    for name, micros, target, met in rows:
        shown = f"{micros / 1000:.1f} ms" if micros >= 1000 else f"{micros:.1f} us"
        table.add_row(name, shown, target, met)
    Console().print(table)


if __name__ == "__main__":
    main()
