"""The `inference-autoscaler` command line: a thin shell over the packages below it."""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute"; loaded lazily so `validate` does not import scipy or kubernetes.
_COMMANDS: dict[str, str] = {
    "validate": "autoscaler.cli.validate:validate",
    "schema": "autoscaler.cli.schema:schema",
    "forecast-eval": "autoscaler.cli.forecast_eval:forecast_eval",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return]


@click.group(cls=_LazyGroup)
@click.version_option(package_name="inference-autoscaler")
def main() -> None:
    """Predictive, cold-start-aware autoscaler for LLM inference on Kubernetes."""
