"""The `inference-autoscaler` command line: a thin shell over the packages below it."""

from __future__ import annotations

import importlib
import os

# The forecaster's refits call scipy's L-BFGS-B, whose BLAS calls stall for milliseconds when a threaded
# OpenBLAS competes for the cores (measured: cold refit 214 ms -> 69 ms single-threaded, same result).
# Set before numpy loads; an explicit setting in the environment wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click

# name -> "module:attribute"; loaded lazily so `validate` does not import scipy or kubernetes.
_COMMANDS: dict[str, str] = {
    "validate": "autoscaler.cli.validate:validate",
    "schema": "autoscaler.cli.schema:schema",
    "forecast-eval": "autoscaler.cli.forecast_eval:forecast_eval",
    "simulate": "autoscaler.cli.simulate:simulate",
    "bench": "autoscaler.cli.bench:bench",
    "emulate": "autoscaler.cli.emulate:emulate",
    "backtest": "autoscaler.cli.backtest:backtest",
    "run": "autoscaler.cli.run:run",
    "drain-check": "autoscaler.cli.drain_check:drain_check_command",
    "profile": "autoscaler.cli.profile:profile",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in _COMMANDS if self.get_command(ctx, n) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name != module_name:
                raise
            return None  # a command whose module is not part of this build
        command: click.Command = getattr(module, attr)
        return command


@click.group(cls=_LazyGroup)
@click.version_option(package_name="inference-autoscaler")
def main() -> None:
    """Predictive, cold-start-aware autoscaler for LLM inference on Kubernetes."""
