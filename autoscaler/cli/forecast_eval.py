"""`inference-autoscaler forecast-eval --series CSV --horizon SECONDS`: which forecaster to trust.

Runs a rolling-origin evaluation of auto, holt and seasonal against the seasonal-naive and last-value
baselines, forecasting through the same online API the controller uses (bands included).
"""

from __future__ import annotations

from dataclasses import asdict

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from autoscaler.cli.params import Number, seconds
from autoscaler.policy import DAY
from autoscaler.strictjson import dumps_strict
from forecasting.evaluate import DEFAULT_METHODS, MethodScore, rolling_origin
from forecasting.series import SeriesError, load_series

DEFAULT_HISTORY_SECONDS = 7 * 86400.0


@click.command("forecast-eval")
@click.option(
    "--series",
    "series_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="CSV (or .csv.gz/.bz2/.xz/.zip): a time column in seconds, then one or more value columns.",
)
@click.option("--column", default=None, help="Value column to evaluate (default: the first value column).")
@click.option("--horizon", type=seconds(0.0, 30 * DAY), required=True, help="Forecast horizon in seconds.")
@click.option(
    "--quantile", type=Number(0, 1, lo_open=True, hi_open=True), default=0.9, show_default=True,
    help="Quantile scored by pinball loss."
)
@click.option(
    "--history",
    type=seconds(0.0, 366 * DAY),
    default=DEFAULT_HISTORY_SECONDS,
    show_default=True,
    help="Initial training window in seconds; forecasts are scored after it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def forecast_eval(
    series_path: str, column: str | None, horizon: float, quantile: float, history: float, as_json: bool
) -> None:
    """Rolling-origin backtest of the forecasting methods on a demand series."""
    try:
        series = load_series(series_path, column)
    except SeriesError as exc:
        hint = "--column" if column is not None and "no column" in str(exc) else "--series"
        raise click.BadParameter(str(exc), param_hint=hint) from None
    step = series.step_seconds
    history_steps = round(history / step)
    horizon_steps = max(1, round(horizon / step))
    span = len(series.values) * step
    if history_steps < 2 or history_steps + horizon_steps > len(series.values):
        raise click.BadParameter(
            f"{series.path} covers {span:g} s at a {step:g}-s step; --history {history:g} must be at "
            f"least two steps and leave at least one horizon ({horizon_steps * step:g} s) to score",
            param_hint="--history",
        )
    scores = rolling_origin(series.values, step, horizon, quantile, DEFAULT_METHODS, history_steps)
    if as_json:
        click.echo(dumps_strict(_as_json(series_path, series.column, step, history, scores), indent=2))
    else:
        _print_table(series_path, series.column, step, scores)


def _as_json(
    path: str, column: str, step: float, history: float, scores: list[MethodScore]
) -> dict[str, object]:
    return {
        "series": path,
        "column": column,
        "step_seconds": step,
        "history_seconds": history,
        "results": [asdict(s) for s in scores],
    }


def _print_table(path: str, column: str, step: float, scores: list[MethodScore]) -> None:
    first = scores[0]
    q = first.quantile
    baseline = next((s.pinball_loss for s in scores if s.method == "seasonal-naive"), None)
    title = (
        f"{path} [{column}]: {first.horizon_seconds:g}-s-ahead forecasts, step {step:g} s, "
        f"{first.forecasts} origins"
    )
    table = Table(title=escape(title))
    table.add_column("method")
    table.add_column(f"pinball q={q:g}", justify="right")
    table.add_column("vs seasonal-naive", justify="right")
    table.add_column("MAPE", justify="right")
    table.add_column(f"coverage q={q:g}", justify="right")
    table.add_column("models used")
    for s in scores:
        ratio = f"{s.pinball_loss / baseline:.2f}x" if baseline else "-"
        mape = "-" if s.mape_percent is None else f"{s.mape_percent:.1f}%"
        used = ", ".join(f"{m} {n}" for m, n in sorted(s.chosen.items(), key=lambda kv: -kv[1]))
        table.add_row(s.method, f"{s.pinball_loss:.4g}", ratio, mape, f"{s.coverage:.1%}", used)
    Console().print(table)
