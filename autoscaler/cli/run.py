"""`inference-autoscaler run`: the Kubernetes controller."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn

import click

from autoscaler.cli.params import PORT, count, seconds
from autoscaler.cli.prom_flags import prometheus_auth, prometheus_auth_options
from autoscaler.policy import DAY, HOUR

if TYPE_CHECKING:
    from autoscaler.controller.manager import Controller

IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _api_client(kubeconfig: str | None, context: str | None, workers: int) -> object:
    """In-cluster ServiceAccount, else the kubeconfig (explicit file/context, or the default one)."""
    from kubernetes import client, config

    cfg = client.Configuration()
    if kubeconfig or context:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except config.ConfigException:
            config.load_kube_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 0, workers + 8)
    return client.ApiClient(cfg)


def _api_failure(e: Exception, host: str) -> str | None:
    """One line for an API server that cannot be reached or refuses us; None for anything else."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    if isinstance(e, ApiException):
        return f"the Kubernetes API server at {host} answered {e.status} {e.reason}: check the credentials and RBAC"
    if isinstance(e, urllib3.exceptions.HTTPError | OSError):
        reason = str(getattr(e, "reason", None) or e)
        if " object at 0x" in reason:  # "<urllib3.connection.HTTPSConnection object at 0x..>: Failed to ..."
            reason = reason.split(">: ", 1)[-1]
        return (f"cannot reach the Kubernetes API server at {host}: {reason}. Check --kubeconfig/--context "
                "and that the cluster is up")
    return None


def _own_namespace() -> str:
    try:
        return IN_CLUSTER_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


@click.command("run")
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False),
    default=None,
    help="kubeconfig file; default: in-cluster ServiceAccount, then ~/.kube/config",
)
@click.option("--context", default=None, help="kubeconfig context")
@click.option("--namespaces", default="", help="comma-separated namespaces to watch; default: all")
@click.option(
    "--prometheus-url",
    default=None,
    envvar="PROMETHEUS_URL",
    help="default Prometheus for policies that name none (else those are scraped directly)",
)
@click.option(
    "--prometheus-allowed-url",
    "prometheus_allowed_urls",
    multiple=True,
    help="a Prometheus a policy's spec.metrics.prometheus.url may name (repeatable); "
    "--prometheus-url is always allowed, any other URL is refused for that policy",
)
@prometheus_auth_options
@click.option(
    "--rate-window",
    default="1m",
    show_default=True,
    help="rate()/histogram window of both metric sources (PromQL and the direct pod scrape); at least 4 scrape "
         "intervals (e.g. 1m for a 15 s scrape)",
)
@click.option("--metrics-port", type=count(0, PORT), default=8080, show_default=True, help="/metrics port (0: off)")
@click.option("--health-port", type=count(0, PORT), default=8081, show_default=True,
              help="/healthz and /readyz port (0: off)")
@click.option(
    "--bind-address",
    default="0.0.0.0",
    show_default=True,
    help="address the /metrics and probe servers listen on; the default (all IPv4 interfaces) is what the "
    "kubelet's probes need; '::' for IPv6 pods, 127.0.0.1 to keep them local",
)
@click.option(
    "--leader-elect/--no-leader-elect",
    default=False,
    show_default=True,
    help="elect a leader on a Lease so only one replica acts",
)
@click.option("--lease-namespace", default=None, help="namespace of the Lease; default: the controller's own")
@click.option("--lease-name", default="inference-autoscaler", show_default=True)
@click.option("--lease-duration", type=seconds(0.0, HOUR), default=15.0, show_default=True, help="seconds")
@click.option("--renew-deadline", type=seconds(0.0, HOUR), default=10.0, show_default=True, help="seconds")
@click.option("--retry-period", type=seconds(0.0, HOUR), default=2.0, show_default=True, help="seconds")
@click.option("--dry-run", is_flag=True, help="decide and record in status/events; never write to targets")
@click.option("--once", is_flag=True, help="sync, run one tick, exit")
@click.option(
    "--max-backoff",
    type=seconds(0.0, DAY),
    default=300.0,
    show_default=True,
    help="cap (seconds) of the per-policy backoff after API errors",
)
@click.option("--workers", type=count(1, 1024), default=16, show_default=True, help="policies reconciled in parallel")
@click.option(
    "--log-level", default="info", show_default=True, type=click.Choice(["debug", "info", "warning", "error"])
)
@click.option("--log-format", default="json", show_default=True, type=click.Choice(["json", "text"]))
def run(
    kubeconfig: str | None,
    context: str | None,
    namespaces: str,
    prometheus_url: str | None,
    prometheus_allowed_urls: tuple[str, ...],
    prometheus_bearer_token_file: str | None,
    prometheus_ca_file: str | None,
    prometheus_headers: tuple[str, ...],
    rate_window: str,
    metrics_port: int,
    health_port: int,
    bind_address: str,
    leader_elect: bool,
    lease_namespace: str | None,
    lease_name: str,
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    dry_run: bool,
    once: bool,
    max_backoff: float,
    workers: int,
    log_level: str,
    log_format: str,
) -> None:
    """Run the controller: watch ModelScalingPolicy resources and scale their targets."""
    from autoscaler.controller import jsonlog
    from autoscaler.controller.manager import Controller, ControllerConfig
    from autoscaler.controller.metric_source import build_source, source_registry

    jsonlog.setup(log_level, log_format == "json")
    log = logging.getLogger("autoscaler.run")
    auth = prometheus_auth(prometheus_bearer_token_file, prometheus_ca_file, prometheus_headers)  # flags first
    if auth.configured:
        log.info("prometheus credentials", extra=dict(auth.describe()))
    try:
        cfg = ControllerConfig(
            namespaces=[n.strip() for n in namespaces.split(",") if n.strip()],
            dry_run=dry_run,
            leader_elect=leader_elect,
            lease_namespace=lease_namespace or _own_namespace(),
            lease_name=lease_name,
            lease_duration_seconds=lease_duration,
            renew_deadline_seconds=renew_deadline,
            retry_period_seconds=retry_period,
            metrics_port=metrics_port or None,
            health_port=health_port or None,
            bind_address=bind_address,
            max_backoff_seconds=max_backoff,
            workers=workers,
        )
        api = _api_client(kubeconfig, context, workers)
    except Exception as e:
        raise click.ClickException(f"cannot configure the Kubernetes client: {e}") from None
    holder: dict[str, Controller] = {}
    try:
        source = build_source(prometheus_url, lambda key: holder["c"].pod_addresses(key), rate_window,
                              prometheus_allowed_urls, auth)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--rate-window") from None
    try:
        controller = Controller(api, source, cfg, extra_registries=[source_registry()])
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    holder["c"] = controller
    if once:
        _one_tick(controller, api, log)
    _until_signalled(controller, log)


def _one_tick(controller: Controller, api: object, log: logging.Logger) -> NoReturn:
    """`--once`: sync, one tick, exit 1 if any policy failed; an unreachable API server is one line."""
    # urllib3 logs each retry of a refused connection; the one-line error below says it all.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    try:
        report = controller.run_once()
    except Exception as e:
        message = _api_failure(e, getattr(getattr(api, "configuration", None), "host", "?"))
        if message is None:
            raise
        raise click.ClickException(message) from None
    log.info("one tick done", extra=report.log_fields())
    sys.exit(1 if report.errors else 0)


def _until_signalled(controller: Controller, log: logging.Logger) -> None:
    """Run the controller until SIGTERM or SIGINT asks it to stop."""

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %s: shutting down", signal.Signals(signum).name)
        controller.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    controller.run()
