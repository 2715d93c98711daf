"""The Prometheus credential flags `run` and `backtest` share (see `autoscaler.sources.prom_auth`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from autoscaler.sources.prom_auth import AuthError, PromAuth

F = TypeVar("F", bound=Callable[..., Any])


def prometheus_auth_options(f: F) -> F:
    """Adds --prometheus-bearer-token-file, --prometheus-ca-file and --prometheus-header (repeatable)."""
    f = click.option(
        "--prometheus-header", "prometheus_headers", multiple=True, metavar="'NAME: VALUE'",
        help="a header sent with every Prometheus query (repeatable), e.g. 'X-Scope-OrgID: team-a' for Mimir, "
             "Cortex or Thanos tenants; not for secrets (use the token file)")(f)
    f = click.option(
        "--prometheus-ca-file", type=click.Path(dir_okay=False), default=None,
        help="PEM bundle of the CA that signed Prometheus' TLS certificate (default: the system's CAs)")(f)
    return click.option(
        "--prometheus-bearer-token-file", type=click.Path(dir_okay=False), default=None,
        help="file holding a bearer token for Prometheus, read again before each query (a rotated "
             "ServiceAccount token is picked up), e.g. /var/run/secrets/kubernetes.io/serviceaccount/token")(f)


def prometheus_auth(bearer_token_file: str | None, ca_file: str | None, headers: tuple[str, ...]) -> PromAuth:
    """The flags' settings, checked now: a bad one is one line naming the flag."""
    try:
        return PromAuth.from_settings(bearer_token_file, ca_file, headers)
    except AuthError as e:
        raise click.UsageError(str(e)) from None
