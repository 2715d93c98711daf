"""Act as the chart's ServiceAccount: a bound token from the TokenRequest API in a kubeconfig.

The controller then runs with exactly the permissions the chart's RBAC grants, checked by the real
API server, instead of the admin's client certificate.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from ..cluster import LocalCluster


def request_token(cluster: LocalCluster, namespace: str, service_account: str, seconds: int = 3600) -> str:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds}}
    tr: Any = cluster.core_v1().create_namespaced_service_account_token(service_account, namespace, body)
    return str(tr.status.token)


def token_kubeconfig(cluster: LocalCluster, token: str, path: Path, user: str, namespace: str) -> Path:
    ca = base64.b64encode(cluster.ca_path.read_bytes()).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": {"server": cluster.server_url, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": user, "namespace": namespace}}],
        "current-context": "e2e",
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


def service_account_kubeconfig(cluster: LocalCluster, namespace: str, service_account: str, path: Path) -> Path:
    """A kubeconfig authenticating as system:serviceaccount:<namespace>:<service_account>."""
    token = request_token(cluster, namespace, service_account)
    return token_kubeconfig(cluster, token, path, f"system:serviceaccount:{namespace}:{service_account}", namespace)


def api_client_for(kubeconfig: Path) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig))
