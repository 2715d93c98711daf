"""Every number flag of the command line is bounded on both sides and refuses NaN and infinities in one line
(autoscaler/cli/params.py): click's FloatRange let `--speed nan` or `--timeout inf` through to the code."""

from __future__ import annotations

import math

import click
import pytest
from click.testing import CliRunner

from autoscaler.cli import main
from autoscaler.cli.params import Number


def _options() -> list[tuple[str, click.Option]]:
    ctx = click.Context(main)
    out = []
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        out += [(name, p) for p in command.params if isinstance(p, click.Option) and not p.is_flag]
    return out


OPTIONS = _options()
NUMBERS = [(c, o) for c, o in OPTIONS if isinstance(o.type, click.FloatRange | click.IntRange)]


def test_the_command_line_has_number_flags_to_check() -> None:
    assert len(NUMBERS) >= 30 and {c for c, _ in NUMBERS} >= {"backtest", "emulate", "profile", "run", "simulate"}


@pytest.mark.parametrize(("command", "option"), OPTIONS, ids=lambda x: x if isinstance(x, str) else x.opts[0])
def test_no_number_flag_is_a_bare_float_or_int(command: str, option: click.Option) -> None:
    assert option.type not in (click.FLOAT, click.INT), f"{command} {option.opts[0]}: use autoscaler.cli.params"
    if isinstance(option.type, click.FloatRange):
        assert isinstance(option.type, Number), f"{command} {option.opts[0]}: a FloatRange lets NaN through"
    if isinstance(option.type, click.FloatRange | click.IntRange):
        lo, hi = option.type.min, option.type.max
        assert lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi), \
            f"{command} {option.opts[0]}: bound it on both sides"


@pytest.mark.parametrize(("command", "option"), NUMBERS, ids=lambda x: x if isinstance(x, str) else x.opts[0])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308", "-1e308"])
def test_a_number_flag_refuses_what_no_physical_setting_is_in_one_line(command: str, option: click.Option,
                                                                      value: str) -> None:
    flag = option.opts[0]
    result = CliRunner().invoke(main, [command, flag, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{flag}'" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(("command", "option"), NUMBERS, ids=lambda x: x if isinstance(x, str) else x.opts[0])
def test_a_number_flags_default_is_within_its_bounds(command: str, option: click.Option) -> None:
    default = option.get_default(click.Context(click.Command(command)))
    if isinstance(default, int | float):  # (a flag without a default has click's sentinel)
        assert option.type.convert(default, option, None) == default


CHART_FLAGS = {  # values.schema.json path -> the `run` flag the chart passes it to (templates/deployment.yaml)
    ("leaderElection", "leaseDurationSeconds"): "--lease-duration",
    ("leaderElection", "renewDeadlineSeconds"): "--renew-deadline",
    ("leaderElection", "retryPeriodSeconds"): "--retry-period",
    ("metrics", "port"): "--metrics-port",
    ("health", "port"): "--health-port",
}


@pytest.mark.parametrize(("path", "flag"), CHART_FLAGS.items(), ids=lambda x: x if isinstance(x, str) else ".".join(x))
def test_the_chart_accepts_no_value_its_flag_refuses(path: tuple[str, str], flag: str) -> None:
    # A value the chart's schema lets through and the flag refuses would install and then crash-loop.
    import json
    from pathlib import Path

    schema = json.loads(Path("charts/inference-autoscaler/values.schema.json").read_text())
    field = schema["properties"][path[0]]["properties"][path[1]]
    (option,) = [o for c, o in NUMBERS if c == "run" and o.opts[0] == flag]
    lo = field.get("minimum", field.get("exclusiveMinimum"))
    assert lo is not None and "maximum" in field, f"{'.'.join(path)}: bound it in values.schema.json"
    bounds = option.type
    assert isinstance(bounds, click.FloatRange | click.IntRange)
    assert bounds.min is not None and bounds.max is not None
    assert bounds.min <= lo and field["maximum"] <= bounds.max
