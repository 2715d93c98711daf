"""The Helm chart: lint, render with default and non-default values, validate every manifest against the
Kubernetes schemas, and keep the shipped CRD identical to `inference-autoscaler schema`.

Needs a real `helm` binary: run `.ci/install-helm.sh` (these tests fail, not skip, without it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.crd import crd

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "inference-autoscaler"
K8S_VERSIONS = ("1.30.0", "1.37.0")
NON_DEFAULT = {
    "replicaCount": 2,
    "watchNamespaces": ["team-a", "team-b"],
    "prometheusUrl": "http://prometheus-operated.monitoring:9090",
    "dryRun": True,
    "serviceMonitor": {"enabled": True, "labels": {"release": "kps"}},
    "grafanaDashboard": {"enabled": True},
    "rbac": {"extraScaleResources": [{"apiGroup": "apps", "resource": "statefulsets"}], "kserve": {"enabled": False}},
    "extraArgs": ["--max-backoff=120"],
    "prometheusAllowedUrls": ["http://prometheus-b.monitoring:9090"],
    "bindAddress": "::",
    "networkPolicy": {"enabled": True,
                      "metricsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mon"}}}]},
    "serviceAccount": {"create": False, "name": "autoscaler-sa"},
    "warmCapacity": {"enabled": True, "namespaces": ["team-b"], "servingPriorityClass": {"create": True}},
    "prometheusAuth": {"bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                       "caFile": "/etc/prometheus-ca/service-ca.crt", "headers": {"X-Scope-OrgID": "team-a"}},
    "extraVolumes": [{"name": "prometheus-ca", "configMap": {"name": "prometheus-ca"}}],
    "extraVolumeMounts": [{"name": "prometheus-ca", "mountPath": "/etc/prometheus-ca", "readOnly": True}],
}


def helm() -> str:
    found = shutil.which("helm") or next(
        (str(p) for p in (Path("/usr/local/bin/helm"), Path.home() / ".local/bin/helm") if p.exists()), None
    )
    if found is None:
        pytest.fail("helm is not installed: run .ci/install-helm.sh")
    return found


def run(*args: str, stdin: str | None = None) -> str:
    p = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"{' '.join(args)} failed:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def render(tmp_path: Path, values: dict[str, Any] | None = None, crds: bool = True) -> tuple[str, list[dict]]:
    args = [helm(), "template", "rel", str(CHART), "--namespace", "autoscaler"]
    if crds:
        args.append("--include-crds")
    if values is not None:
        f = tmp_path / "values.yaml"
        f.write_text(yaml.safe_dump(values))
        args += ["-f", str(f)]
    text = run(*args)
    return text, [d for d in yaml.safe_load_all(text) if d]


def validate(text: str, version: str) -> None:
    exe = Path(sys.executable).with_name("kubernetes-validate")
    cmd = [str(exe) if exe.exists() else "kubernetes-validate", "--strict", "-k", version, "-"]
    p = subprocess.run(cmd, input=text, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "ERROR" not in out, out


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def test_chart_lints_strictly_with_default_and_non_default_values(tmp_path):
    run(helm(), "lint", "--strict", str(CHART))
    f = tmp_path / "v.yaml"
    f.write_text(yaml.safe_dump(NON_DEFAULT))
    run(helm(), "lint", "--strict", str(CHART), "-f", str(f))


@pytest.mark.parametrize("version", K8S_VERSIONS)
@pytest.mark.parametrize("values", [None, NON_DEFAULT], ids=["default", "non-default"])
def test_rendered_manifests_validate_against_kubernetes_schemas(tmp_path, values, version):
    text, docs = render(tmp_path, values)
    assert by_kind(docs, "Deployment") and by_kind(docs, "CustomResourceDefinition")
    validate(text, version)


def test_values_schema_rejects_unknown_and_out_of_range_values(tmp_path):
    for bad in ({"bogus": 1}, {"replicaCount": -1}, {"logLevel": "loud"}, {"watchNamespaces": ["Not_A_Label"]},
                {"prometheusAllowedUrls": ["http://a:9090,http://b:9090"]}, {"prometheusAllowedUrls": ["file:///etc"]},
                {"bindAddress": "0.0.0.0 --dry-run"}):
        f = tmp_path / "bad.yaml"
        f.write_text(yaml.safe_dump(bad))
        p = subprocess.run([helm(), "template", "rel", str(CHART), "-f", str(f)], capture_output=True, text=True)
        assert p.returncode != 0, bad


def test_shipped_crd_is_exactly_the_generated_one():
    """Regenerate with: inference-autoscaler schema > charts/inference-autoscaler/crds/modelscalingpolicies.yaml"""
    shipped = yaml.safe_load((CHART / "crds" / "modelscalingpolicies.yaml").read_text())
    assert shipped == crd()
    version = shipped["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}} and version["additionalPrinterColumns"]


def test_default_deployment_is_hardened(tmp_path):
    _, docs = render(tmp_path)
    pod = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["resources"]["requests"] and c["resources"]["limits"]
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "--no-leader-elect" in c["args"]


def test_more_than_one_replica_turns_leader_election_on_with_a_lease_role(tmp_path):
    _, docs = render(tmp_path, {"replicaCount": 2})
    args = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--leader-elect" in args and "--lease-namespace=autoscaler" in args
    (role,) = by_kind(docs, "Role")
    assert role["metadata"]["namespace"] == "autoscaler"
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]


def _rules(docs: list[dict]) -> list[dict]:
    return [r for cr in by_kind(docs, "ClusterRole") + by_kind(docs, "Role") for r in cr["rules"]]


def test_rbac_is_least_privilege_and_never_touches_secrets(tmp_path):
    _, docs = render(tmp_path, {"replicaCount": 2})
    rules = _rules(docs)
    granted = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    assert not any(res == "secrets" or res == "*" or v == "*" for _, res, v in granted)
    assert not any(v in ("delete", "deletecollection", "escalate", "bind", "impersonate") for _, _, v in granted)
    writes = {(g, res, v) for g, res, v in granted if v in ("create", "update", "patch")}
    assert writes == {
        ("autoscaler.inference.dev", "modelscalingpolicies/status", "patch"),
        ("autoscaler.inference.dev", "modelscalingpolicies/status", "update"),
        ("apps", "deployments/scale", "update"),
        ("apps", "deployments/scale", "patch"),
        ("leaderworkerset.x-k8s.io", "leaderworkersets/scale", "update"),
        ("leaderworkerset.x-k8s.io", "leaderworkersets/scale", "patch"),
        ("serving.kserve.io", "inferenceservices", "patch"),
        ("", "events", "create"),
        ("", "events", "patch"),
        ("", "pods", "patch"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }


def test_targets_can_be_watched_for_the_informer_caches(tmp_path):
    """The controller reads targets from informer caches (list + watch per kind in use), not a GET a tick."""
    _, docs = render(tmp_path, {"rbac": {"extraScaleResources": [{"apiGroup": "example.dev", "resource": "pools"}]}})
    granted = {(g, res, v) for r in _rules(docs) for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    for group, resource in (("apps", "deployments"), ("leaderworkerset.x-k8s.io", "leaderworkersets"),
                            ("serving.kserve.io", "inferenceservices"), ("serving.kserve.io", "llminferenceservices"),
                            ("example.dev", "pools")):
        assert {(group, resource, "list"), (group, resource, "watch")} <= granted, resource


def test_watch_namespaces_bind_write_permissions_per_namespace_only(tmp_path):
    _, docs = render(tmp_path, {"watchNamespaces": ["team-a", "team-b"]})
    crbs = {d["roleRef"]["name"] for d in by_kind(docs, "ClusterRoleBinding")}
    assert crbs == {"rel-inference-autoscaler-observe"}  # only the read-only observation role is cluster-wide
    rbs = [d for d in by_kind(docs, "RoleBinding") if d["roleRef"]["name"] == "rel-inference-autoscaler"]
    assert sorted(d["metadata"]["namespace"] for d in rbs) == ["team-a", "team-b"]
    args = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespaces=team-a,team-b" in args


def _roles_granting(docs: list[dict], group: str, resource: str, verb: str) -> set[str]:
    return {cr["metadata"]["name"] for cr in by_kind(docs, "ClusterRole") + by_kind(docs, "Role")
            if any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in cr["rules"])}


@pytest.mark.parametrize("namespaces", [[], ["team-a", "team-b"]])
def test_pods_patch_is_granted_only_in_the_watched_namespaces_and_no_eviction(tmp_path, namespaces):
    """The deletion-cost annotation needs `patch` on pods: only through the role bound per watched namespace
    (cluster-wide only when every namespace is watched), never through the cluster-wide observation role;
    and no right to delete or evict pods anywhere."""
    _, docs = render(tmp_path, {"watchNamespaces": namespaces})
    assert _roles_granting(docs, "", "pods", "patch") == {"rel-inference-autoscaler"}
    bindings = [d for d in by_kind(docs, "RoleBinding") + by_kind(docs, "ClusterRoleBinding")
                if d["roleRef"]["name"] == "rel-inference-autoscaler"]
    if namespaces:
        assert all(d["kind"] == "RoleBinding" for d in bindings)
        assert sorted(d["metadata"]["namespace"] for d in bindings) == namespaces
    else:
        assert [d["kind"] for d in bindings] == ["ClusterRoleBinding"]
    for verb in ("delete", "deletecollection", "create"):
        assert not _roles_granting(docs, "", "pods", verb)
    assert not _roles_granting(docs, "", "pods/eviction", "create")
    assert not _roles_granting(docs, "policy", "pods/eviction", "create")


def test_grafana_dashboard_is_real_json_with_the_controller_metrics(tmp_path):
    import json

    _, docs = render(tmp_path, {"grafanaDashboard": {"enabled": True}})
    (cm,) = by_kind(docs, "ConfigMap")
    dash = json.loads(cm["data"]["inference-autoscaler.json"])
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p["targets"])
    for metric in (
        "desired_replicas",
        "current_replicas",
        "forecast_work_replicas",
        "lead_time_seconds",
        "decisions_total",
    ):
        assert f"inference_autoscaler_{metric}" in exprs


def test_the_controller_metric_names_in_the_dashboard_exist():
    """The dashboard must not query metrics the controller does not export."""
    import json
    import re

    from prometheus_client import CollectorRegistry

    from autoscaler.controller.telemetry import ControllerMetrics
    from autoscaler.sources.telemetry import SourceTelemetry

    reg = CollectorRegistry()
    ControllerMetrics(reg)
    SourceTelemetry(reg)
    names: set[str] = set()
    for m in reg.collect():  # families (labelled metrics have no samples until first used)
        names |= {m.name, f"{m.name}_total", f"{m.name}_bucket", f"{m.name}_sum", f"{m.name}_count"}
    dash = json.loads((CHART / "files" / "dashboard.json").read_text())
    used = {
        n for p in dash["panels"] for t in p["targets"] for n in re.findall(r"inference_autoscaler_[a-z_]+", t["expr"])
    }
    assert used and used <= names, used - names


@pytest.mark.skipif(os.environ.get("CI_NO_DOCKERFILE_CHECK") == "1", reason="opt-out")
def test_dockerfile_runs_as_a_numeric_non_root_user_and_starts_the_controller():
    text = (ROOT / "Dockerfile").read_text()
    assert text.count("FROM ") == 2  # multi-stage
    assert "USER 65532:65532" in text
    assert 'ENTRYPOINT ["inference-autoscaler"]' in text and 'CMD ["run"]' in text


def _template_fails(tmp_path: Path, values: dict[str, Any]) -> str:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(values))
    p = subprocess.run([helm(), "template", "rel", str(CHART), "-f", str(f)], capture_output=True, text=True)
    assert p.returncode != 0, values
    return p.stderr


@pytest.mark.parametrize("entry", [{"apiGroup": "*", "resource": "statefulsets"}, {"apiGroup": "apps", "resource": "*"},
                                   {"apiGroup": "apps", "resource": "statefulsets/*"},
                                   {"apiGroup": "apps", "resource": "deployments/scale"}])
def test_extra_scale_resources_refuse_wildcards_and_subresources(tmp_path, entry):
    err = _template_fails(tmp_path, {"rbac": {"extraScaleResources": [entry]}})
    assert "extraScaleResources" in err


def test_an_existing_service_account_must_be_named(tmp_path):
    err = _template_fails(tmp_path, {"serviceAccount": {"create": False}})
    assert "serviceAccount.name is required" in err
    _, docs = render(tmp_path, {"serviceAccount": {"create": False, "name": "mine"}})
    assert not by_kind(docs, "ServiceAccount")
    subjects = [s for d in by_kind(docs, "ClusterRoleBinding") + by_kind(docs, "RoleBinding") for s in d["subjects"]]
    assert subjects and all(s["name"] == "mine" for s in subjects)
    assert by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["serviceAccountName"] == "mine"


@pytest.mark.parametrize("namespaces", [[], ["team-a", "team-b"]], ids=["cluster-wide", "per-namespace"])
def test_kserve_patch_rights_follow_their_toggle_in_both_modes(tmp_path, namespaces):
    def kserve_grants(docs: list[dict]) -> set[tuple[str, str]]:
        return {(res, v) for r in _rules(docs) if "serving.kserve.io" in r["apiGroups"]
                for res in r["resources"] for v in r["verbs"]}

    _, on = render(tmp_path, {"watchNamespaces": namespaces})
    assert kserve_grants(on) == {("inferenceservices", v) for v in ("get", "list", "watch", "patch")} | {
        ("llminferenceservices", v) for v in ("get", "list", "watch")}
    bound = [d for d in by_kind(on, "ClusterRoleBinding") + by_kind(on, "RoleBinding")
             if d["roleRef"]["name"] == "rel-inference-autoscaler-kserve"]
    if namespaces:
        assert sorted(d["metadata"]["namespace"] for d in bound) == namespaces
        assert not any(d["roleRef"]["name"].endswith("-kserve") for d in by_kind(on, "ClusterRoleBinding"))
    else:
        assert [d["kind"] for d in bound] == ["ClusterRoleBinding"]
    _, off = render(tmp_path, {"watchNamespaces": namespaces, "rbac": {"kserve": {"enabled": False}}})
    assert kserve_grants(off) == set()
    assert not any(d["roleRef"]["name"].endswith("-kserve") for d in by_kind(off, "ClusterRoleBinding")
                   + by_kind(off, "RoleBinding"))


def test_network_policy_admits_only_the_two_ports(tmp_path):
    _, docs = render(tmp_path)
    assert not by_kind(docs, "NetworkPolicy")  # opt-in
    peers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    _, docs = render(tmp_path, {"networkPolicy": {"enabled": True, "metricsFrom": peers}})
    (np,) = by_kind(docs, "NetworkPolicy")
    assert np["spec"]["policyTypes"] == ["Ingress"]
    assert np["spec"]["podSelector"]["matchLabels"] == by_kind(docs, "Deployment")[0]["spec"]["selector"]["matchLabels"]
    rules = np["spec"]["ingress"]
    assert [r["ports"] for r in rules] == [[{"port": 8080, "protocol": "TCP"}], [{"port": 8081, "protocol": "TCP"}]]
    assert rules[0]["from"] == peers and "from" not in rules[1]


def test_prometheus_allow_list_and_bind_address_reach_the_controller(tmp_path):
    _, docs = render(tmp_path, {"prometheusUrl": "http://prom-a:9090",
                                "prometheusAllowedUrls": ["http://prom-b:9090", "https://prom-c"]})
    args = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--prometheus-url=http://prom-a:9090" in args
    assert [a for a in args if a.startswith("--prometheus-allowed-url=")] == [
        "--prometheus-allowed-url=http://prom-b:9090", "--prometheus-allowed-url=https://prom-c"]
    assert "--bind-address=0.0.0.0" in args
    _, docs = render(tmp_path)
    args = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any(a.startswith("--prometheus-allowed-url") for a in args)  # default: prometheusUrl only
    assert "--rate-window=1m" in args  # the controller's default, stated


def test_prometheus_credentials_reach_the_controller_as_flags_it_accepts(tmp_path):
    import click

    from autoscaler.cli import main
    from autoscaler.sources.prom_auth import parse_header

    _, docs = render(tmp_path, NON_DEFAULT)
    pod = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert "--prometheus-bearer-token-file=/var/run/secrets/kubernetes.io/serviceaccount/token" in args
    assert "--prometheus-ca-file=/etc/prometheus-ca/service-ca.crt" in args
    assert "--prometheus-header=X-Scope-OrgID: team-a" in args
    assert {"name": "prometheus-ca", "mountPath": "/etc/prometheus-ca", "readOnly": True} in (
        pod["containers"][0]["volumeMounts"])
    assert {"name": "prometheus-ca", "configMap": {"name": "prometheus-ca"}} in pod["volumes"]
    with click.Context(main) as ctx:  # the controller's own parser reads the rendered arguments
        command = main.get_command(ctx, "run")
        assert command is not None
        parsed = command.make_context("run", args[1:]).params
    assert parsed["prometheus_ca_file"] == "/etc/prometheus-ca/service-ca.crt"
    assert [parse_header(h) for h in parsed["prometheus_headers"]] == [("X-Scope-OrgID", "team-a")]
    _, docs = render(tmp_path)
    args = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert not any(a.startswith(("--prometheus-bearer", "--prometheus-ca", "--prometheus-header")) for a in args)


@pytest.mark.parametrize("auth", [{"headers": {"Authorization": "Bearer x"}}, {"headers": {"host": "x"}},
                                  {"headers": {"X-Tenant": "a\nb"}}, {"bearerTokenFile": "token"},
                                  {"caFile": "relative/ca.pem"}, {"token": "x"}])
def test_the_schema_refuses_credentials_the_controller_would_refuse(tmp_path, auth):
    err = _template_fails(tmp_path, {"prometheusAuth": auth})
    assert "prometheusAuth" in err or "invalid propertyName" in err, err  # helm names no path for the latter


def test_the_rate_window_reaches_the_controller_and_the_schema_refuses_a_non_duration(tmp_path):
    _, docs = render(tmp_path, {"rateWindow": "2m"})
    args = by_kind(docs, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--rate-window=2m" in args
    for bad in ("1.5m", "0s", "60", "1d"):
        assert "rateWindow" in _template_fails(tmp_path, {"rateWindow": bad})


@pytest.mark.parametrize("namespaces", [[], ["team-a", "team-b"]], ids=["cluster-wide", "per-namespace"])
def test_warm_capacity_brings_its_priority_classes_and_only_the_deployment_verbs_it_needs(tmp_path, namespaces):
    _, off = render(tmp_path, {"watchNamespaces": namespaces})
    assert not by_kind(off, "PriorityClass")
    assert not any(r["roleRef"]["name"].endswith("-warm") for r in by_kind(off, "RoleBinding")
                   + by_kind(off, "ClusterRoleBinding"))

    text, on = render(tmp_path, {"watchNamespaces": namespaces, "warmCapacity": {"enabled": True}})
    (pc,) = by_kind(on, "PriorityClass")
    assert pc["metadata"]["name"] == "inference-autoscaler-warm"
    assert pc["value"] < 0 and pc["preemptionPolicy"] == "Never" and pc["globalDefault"] is False
    granted = {(g, res, v) for r in _rules(on) for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    _, base = render(tmp_path, {"watchNamespaces": namespaces})
    before = {(g, res, v) for r in _rules(base) for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    assert granted - before == {("apps", "deployments", v) for v in ("create", "patch", "delete")}
    assert not any("eviction" in res for _, res, _ in granted)  # the scheduler preempts; nothing evicts
    bound = [d for d in by_kind(on, "ClusterRoleBinding") + by_kind(on, "RoleBinding")
             if d["roleRef"]["name"] == "rel-inference-autoscaler-warm"]
    if namespaces:
        assert [d["kind"] for d in bound] == ["RoleBinding", "RoleBinding"]
        assert sorted(d["metadata"]["namespace"] for d in bound) == namespaces
    else:
        assert [d["kind"] for d in bound] == ["ClusterRoleBinding"]
    validate(text, K8S_VERSIONS[-1])

    # Deployment writes only where warm capacity is used, when the operator says where that is.
    _, narrow = render(tmp_path, {"watchNamespaces": ["team-a", "team-b"],
                                  "warmCapacity": {"enabled": True, "namespaces": ["team-b"]}})
    warm_bound = [d for d in by_kind(narrow, "ClusterRoleBinding") + by_kind(narrow, "RoleBinding")
                  if d["roleRef"]["name"] == "rel-inference-autoscaler-warm"]
    assert [(d["kind"], d["metadata"]["namespace"]) for d in warm_bound] == [("RoleBinding", "team-b")]

    _, both = render(tmp_path, {"warmCapacity": {"enabled": True, "servingPriorityClass": {"create": True}}})
    classes = {d["metadata"]["name"]: d["value"] for d in by_kind(both, "PriorityClass")}
    assert classes["inference-autoscaler-serving"] > 0 > classes["inference-autoscaler-warm"]


def test_warm_capacity_values_are_checked(tmp_path):
    for bad in ({"warmCapacity": {"priorityClass": {"value": 0}}},
                {"warmCapacity": {"priorityClass": {"name": "Not A Name"}}},
                {"warmCapacity": {"servingPriorityClass": {"value": 2000000000}}},
                {"warmCapacity": {"bogus": True}}, {"warmCapacity": {"namespaces": ["Team_A"]}}):
        f = tmp_path / "bad.yaml"
        f.write_text(yaml.safe_dump(bad))
        p = subprocess.run([helm(), "template", "rel", str(CHART), "-f", str(f)], capture_output=True, text=True,
                           timeout=120)
        assert p.returncode != 0, bad
EXAMPLE = CHART / "examples" / "vllm-graceful-drain.yaml"


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_graceful_drain_example_is_valid_and_sized_as_documented(version):
    """The serving-side example (docs/scale-down.md): valid, its preStop waits on the engine's in-flight gauges
    (bounded), and the grace period covers propagation + the bounded drain + a margin."""
    text = EXAMPLE.read_text()
    validate(text, version)
    (dep,) = [d for d in yaml.safe_load_all(text) if d]
    pod = dep["spec"]["template"]["spec"]
    hook = "\n".join(pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"])
    assert "vllm:num_requests_running" in hook and "vllm:num_requests_waiting" in hook
    compile(pod["containers"][0]["lifecycle"]["preStop"]["exec"]["command"][2], "preStop", "exec")
    assert "PROPAGATION_SECONDS, DRAIN_SECONDS = 10, 180" in hook
    assert pod["terminationGracePeriodSeconds"] == 10 + 180 + 10


def test_examples_stay_out_of_the_packaged_chart(tmp_path):
    run(helm(), "package", str(CHART), "-d", str(tmp_path))
    (pkg,) = tmp_path.glob("*.tgz")
    import tarfile

    with tarfile.open(pkg) as tar:
        assert not [n for n in tar.getnames() if "/examples/" in n]
