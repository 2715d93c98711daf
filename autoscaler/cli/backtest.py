"""`inference-autoscaler backtest`: what the autoscaler would have done over Prometheus history."""

from __future__ import annotations

import sys
from datetime import datetime, timezone

import click

from autoscaler.cli.params import seconds
from autoscaler.cli.prom_flags import prometheus_auth, prometheus_auth_options
from autoscaler.policy import DAY, HOUR
from autoscaler.strictjson import dumps_strict

LAST_TIME = 253402300799.0  # 9999-12-31T23:59:59Z, the last time an ISO date can name


def parse_time(raw: str, flag: str | None = None) -> float:
    """Unix seconds, or an ISO 8601 time (UTC when no zone is given), within 1970..9999 either way."""
    try:
        t = float(raw)
    except ValueError:
        t = _iso_time(raw, flag)
    if not 0 <= t <= LAST_TIME:
        raise click.BadParameter(f"{raw!r} is not a time in 1970..9999 (unix seconds 0..{LAST_TIME:.0f})",
                                 param_hint=flag)
    return t


def _iso_time(raw: str, flag: str | None) -> float:
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{raw!r} is neither unix seconds nor an ISO time like 2023-11-16T18:15:00Z",
                                 param_hint=flag) from None
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)).timestamp()


@click.command("backtest")
@click.option("--prometheus", "prometheus_url", required=True, help="Prometheus base URL")
@click.option("--policy", "policy_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="ModelScalingPolicy YAML (the first policy in the file is used)")
@click.option("--start", required=True, help="unix seconds or ISO time")
@click.option("--end", required=True, help="unix seconds or ISO time")
@click.option("--step", "step_seconds", type=seconds(1.0, DAY, lo_open=False), default=60.0, show_default=True,
              help="seconds between decisions (the virtual clock)")
@click.option("--window", default="1m", show_default=True, help="rate()/histogram window in the PromQL")
@click.option("--namespace-label", default="namespace", show_default=True,
              help="label holding the pod namespace ('' if the series have none)")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="write backtest.json and backtest.png here")
@click.option("--timeout", type=seconds(0.1, HOUR, lo_open=False), default=30.0, show_default=True,
              help="seconds one Prometheus query may take")
@prometheus_auth_options
def backtest(prometheus_url: str, policy_file: str, start: str, end: str, step_seconds: float, window: str,
             namespace_label: str, as_json: bool, out_dir: str | None, timeout: float,
             prometheus_bearer_token_file: str | None, prometheus_ca_file: str | None,
             prometheus_headers: tuple[str, ...]) -> None:
    """Replay the decision core over a model's history and compare with the replicas that ran."""
    from autoscaler.backtest import fetch_history, replay
    from autoscaler.backtest.history import grid_steps
    from autoscaler.backtest.prom_range import PrometheusRange
    from autoscaler.backtest.report import table, write_outputs
    from autoscaler.policy_loader import PolicyError, load_policy_file
    from autoscaler.sources.prom_api import SourceError
    from autoscaler.sources.promql import PromQLBuilder

    try:
        policies = load_policy_file(policy_file)
    except PolicyError as e:
        for p in e.problems:
            click.echo(str(p), err=True)
        sys.exit(1)
    if not policies:
        raise click.ClickException(f"{policy_file} holds no ModelScalingPolicy")
    policy = policies[0]
    t0, t1 = parse_time(start, "--start"), parse_time(end, "--end")
    try:  # before any query: a range no replay can hold is the flags' fault
        grid_steps(t0, t1, step_seconds)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--end") from None
    try:
        builder = PromQLBuilder(namespace_label=namespace_label or None, window=window)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--window") from None
    auth = prometheus_auth(prometheus_bearer_token_file, prometheus_ca_file, prometheus_headers)
    api = PrometheusRange(prometheus_url, timeout_seconds=timeout, auth=auth)
    try:
        history = fetch_history(api, policy, t0, t1, step_seconds, builder)
    except SourceError as e:
        raise click.ClickException(f"Prometheus query failed ({e.kind}): {e.detail}") from None
    finally:
        api.close()
    result = replay(policy, history)
    outputs = write_outputs(result, out_dir) if out_dir else {}
    if as_json:
        click.echo(dumps_strict({**result.summary(), "outputs": {k: str(v) for k, v in outputs.items()}}, indent=1))
    else:
        click.echo(table(result))
        for kind, path in outputs.items():
            click.echo(f"wrote {kind}: {path}")
