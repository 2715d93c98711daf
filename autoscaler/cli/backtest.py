"""`inference-autoscaler backtest`: what the autoscaler would have done over Prometheus history."""

from __future__ import annotations

import sys
from datetime import datetime, timezone

import click

from autoscaler.strictjson import dumps_strict


def parse_time(raw: str) -> float:
    """Unix seconds, or an ISO 8601 time (UTC when no zone is given)."""
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{raw!r} is neither unix seconds nor an ISO time like 2023-11-16T18:15:00Z"
                                 ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


@click.command("backtest")
@click.option("--prometheus", "prometheus_url", required=True, help="Prometheus base URL")
@click.option("--policy", "policy_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="ModelScalingPolicy YAML (the first policy in the file is used)")
@click.option("--start", required=True, help="unix seconds or ISO time")
@click.option("--end", required=True, help="unix seconds or ISO time")
@click.option("--step", "step_seconds", type=click.FloatRange(min=1), default=60.0, show_default=True,
              help="seconds between decisions (the virtual clock)")
@click.option("--window", default="1m", show_default=True, help="rate()/histogram window in the PromQL")
@click.option("--namespace-label", default="namespace", show_default=True,
              help="label holding the pod namespace ('' if the series have none)")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="write backtest.json and backtest.png here")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True)
def backtest(prometheus_url: str, policy_file: str, start: str, end: str, step_seconds: float, window: str,
             namespace_label: str, as_json: bool, out_dir: str | None, timeout: float) -> None:
    """Replay the decision core over a model's history and compare with the replicas that ran."""
    from autoscaler.backtest import fetch_history, replay
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
    t0, t1 = parse_time(start), parse_time(end)
    if t1 <= t0:
        raise click.BadParameter("must be after --start", param_hint="--end")
    try:
        builder = PromQLBuilder(namespace_label=namespace_label or None, window=window)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--window") from None
    api = PrometheusRange(prometheus_url, timeout_seconds=timeout)
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
