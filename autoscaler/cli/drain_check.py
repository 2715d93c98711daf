"""`inference-autoscaler drain-check NODE`: may NODE be drained now without breaking a policy's SLO?

From the cluster (kubeconfig like `run`): every ModelScalingPolicy whose target has replicas on NODE, how
many replacements are ready on nodes that stay, yes/no and why. The verdict is the controller's own
(`autoscaler.controller.drain.drain_check` over the policy's last decision, as in its status.drain). A node
that is not cordoned yet is asked about as if it were: its replicas count as going.
Exit code: 0 safe, 1 not safe, 2 error.
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

EXIT_SAFE, EXIT_UNSAFE, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _check(api: Any, node_name: str, namespaces: list[str]) -> list[tuple[str, Any]]:
    """(policy key, NodeDrain) for every policy whose target has replicas on the node."""
    from kubernetes import client

    from autoscaler.controller.drain import drain_check, leaving_view, need_from_status
    from autoscaler.policy import API_GROUP, PLURAL, VERSION
    from autoscaler.policy_loader import PolicyError, parse_policy
    from autoscaler.targets import TargetBlocked, TargetNotFound
    from autoscaler.targets.api import call_json, is_not_found
    from autoscaler.targets.resolve import PluralResolver, TargetApis, resolve_target

    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    try:
        call_json(core.read_node, node_name)
    except client.ApiException as e:
        if is_not_found(e):
            _fail(f"node {node_name!r} not found: check the name (kubectl get nodes)")
        raise
    nodes = {str((n.get("metadata") or {}).get("name")): n for n in call_json(core.list_node).get("items") or ()}
    if namespaces:
        policies = [p for ns in namespaces
                    for p in call_json(custom.list_namespaced_custom_object, API_GROUP, VERSION, ns, PLURAL)
                    .get("items") or ()]
    else:
        policies = call_json(custom.list_cluster_custom_object, API_GROUP, VERSION, PLURAL).get("items") or []
    apis = TargetApis(client.AppsV1Api(api), custom, api)
    plurals = PluralResolver(api)
    out: list[tuple[str, Any]] = []
    for raw in policies:
        meta = raw.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        try:
            policy = parse_policy(raw, key)
            ns = policy.metadata.namespace
            reading = resolve_target(apis, plurals, policy.spec.target_ref, ns).read()
        except (PolicyError, TargetNotFound, TargetBlocked):
            continue  # an invalid policy or a missing target scales nothing: it has no replicas to lose
        if not reading.selector:
            continue
        pods = call_json(core.list_namespaced_pod, ns, label_selector=reading.selector).get("items") or []
        view = leaving_view(pods, nodes, assume_leaving=node_name)
        if node_name not in view.leaving:
            continue
        why, replicas = view.leaving[node_name]
        need = need_from_status(raw.get("status"))
        out.append((key, drain_check(node_name, why, replicas, view.ready_staying, need)))
    return out


@click.command("drain-check")
@click.argument("node")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="kubeconfig file; default: in-cluster ServiceAccount, then ~/.kube/config")
@click.option("--context", default=None, help="kubeconfig context")
@click.option("--namespaces", default="", help="comma-separated namespaces of the policies; default: all")
def drain_check_command(node: str, kubeconfig: str | None, context: str | None, namespaces: str) -> None:
    """Whether draining NODE now keeps every policy's SLO (exit 0 yes, 1 no, 2 error)."""
    from autoscaler.cli.run import _api_client, _api_failure

    try:
        api: Any = _api_client(kubeconfig, context, 1)
    except Exception as e:
        _fail(f"cannot configure the Kubernetes client: {e}; check --kubeconfig/--context")
    try:
        checks = _check(api, node, [n.strip() for n in namespaces.split(",") if n.strip()])
    except Exception as e:
        message = _api_failure(e, getattr(getattr(api, "configuration", None), "host", "?"))
        _fail(message or f"{type(e).__name__}: {e}")
    if not checks:
        click.echo(f"yes: no policy's target has replicas on {node}")
        sys.exit(EXIT_SAFE)
    for key, c in checks:
        verdict = "yes" if c.safe else "no"
        click.echo(f"{key}: {c.replicas} replica(s) on {node} ({c.leaving}); {c.replacements_ready}/"
                   f"{c.replacements_needed} replacement(s) ready elsewhere; {verdict}: {c.reason}")
    unsafe = [k for k, c in checks if not c.safe]
    if unsafe:
        click.echo(f"no: draining {node} now would break the SLO of {', '.join(unsafe)}"
                   + ("" if all(c.leaving != "not cordoned yet" for _, c in checks)
                      else f"; cordon it first (kubectl cordon {node}) so replacements start"))
        sys.exit(EXIT_UNSAFE)
    click.echo(f"yes: draining {node} keeps the SLO of {len(checks)} polic{'y' if len(checks) == 1 else 'ies'}")
    sys.exit(EXIT_SAFE)
