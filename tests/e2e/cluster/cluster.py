"""A real Kubernetes control plane on loopback, with KWOK fake GPU nodes.

``LocalCluster`` runs etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the ``kwok`` controller as local processes built from
source by ``.ci/build-kube.sh`` (binaries in ``$KUBE_BIN_DIR``, default
``~/.cache/inference-autoscaler/kube-bin``). Everything listens on 127.0.0.1
only, on free ports, with certificates made by the ``openssl`` CLI.

    with LocalCluster(ready_delay=10) as c:
        c.add_gpu_node("gpu-0", gpus=8)
        core = c.core_v1()
        ...

Nodes created with :meth:`LocalCluster.add_gpu_node` carry the annotation
``kwok.x-k8s.io/node=fake`` (so KWOK manages them), the label ``type=kwok``
and the taint ``kwok.x-k8s.io/node=fake:NoSchedule``; workloads need
:data:`KWOK_TOLERATION` (and may use :data:`KWOK_NODE_SELECTOR`). Pods bound
to them go Pending -> Running (not ready) -> Ready after ``ready_delay``
seconds: a cold start. See :mod:`stages` for the per-pod annotations.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import yaml

from . import stages as _stages

T = TypeVar("T")

DEFAULT_BIN_DIR = Path.home() / ".cache" / "inference-autoscaler" / "kube-bin"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")

KWOK_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
KWOK_NODE_SELECTOR = {"type": "kwok"}
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}
GPU_RESOURCE = "nvidia.com/gpu"
SERVICE_CIDR = "10.0.0.0/24"


class ClusterError(RuntimeError):
    pass


class MissingBinariesError(ClusterError):
    pass


def bin_dir_from_env() -> Path:
    return Path(os.environ.get("KUBE_BIN_DIR") or DEFAULT_BIN_DIR)


def check_binaries(bin_dir: Path | None = None) -> Path:
    """Return the binary dir, or raise MissingBinariesError naming what is missing."""
    bin_dir = Path(bin_dir) if bin_dir else bin_dir_from_env()
    missing = [b for b in BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if not (bin_dir / "kwok-kustomize" / "crd").is_dir():
        missing.append("kwok-kustomize/")
    if missing:
        raise MissingBinariesError(
            f"e2e control-plane binaries missing in {bin_dir}: {', '.join(missing)}. "
            "Run .ci/build-kube.sh (or set KUBE_BIN_DIR)."
        )
    if shutil.which("openssl") is None:
        raise MissingBinariesError("openssl CLI not found (apt-get install openssl)")
    return bin_dir


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(
    fn: Callable[[], T | None], timeout: float, interval: float = 0.25, what: str = "condition"
) -> T:
    """Poll ``fn`` until it returns a truthy value; exceptions count as 'not yet'."""
    deadline = time.monotonic() + timeout
    last_exc: BaseException | None = None
    while True:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:
            last_exc = e
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}" + (
                f" (last error: {last_exc!r})" if last_exc else ""))
        time.sleep(interval)


def _pdeathsig() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: die with the parent (thread)
    except Exception:
        pass


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise ClusterError(f"openssl {' '.join(args)} failed: {r.stderr.strip()}")


class _Proc:
    """One control-plane process with its log file."""

    def __init__(self, name: str, argv: list[str], log_path: Path, pdeathsig: bool) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("ab")
        self._log.write(f"\n==== start {time.strftime('%H:%M:%S')}: {' '.join(argv)}\n".encode())
        self._log.flush()
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_pdeathsig if pdeathsig else None,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def check_alive(self) -> None:
        if not self.alive():
            raise ClusterError(
                f"{self.name} exited with code {self.popen.returncode}; log {self.log_path}:\n{self.tail()}"
            )

    def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    self.popen.kill()
                self.popen.wait(5)
        self._log.close()


class LocalCluster:
    """etcd + kube-apiserver + controller-manager + scheduler + kwok on loopback."""

    def __init__(
        self,
        bin_dir: str | Path | None = None,
        *,
        workdir: str | Path | None = None,
        ready_delay: float = 10.0,
        running_delay: float = 1.0,
        kwok: bool = True,
        keep_workdir: bool | None = None,
        verbosity: int = 1,
        pdeathsig: bool = True,
        startup_timeout: float = 90.0,
    ) -> None:
        """
        ready_delay: seconds from container start (phase Running) to Ready on KWOK nodes
            (the simulated cold start; per pod: annotation ``pod-ready.stage.kwok.x-k8s.io/delay``).
        running_delay: seconds from binding to phase Running.
        keep_workdir: keep certs/logs/etcd data after stop (default: env E2E_KEEP_CLUSTER=1).
        pdeathsig: children get SIGTERM if the thread that started them dies (start the
            cluster from the main thread).
        """
        self.bin_dir = check_binaries(Path(bin_dir) if bin_dir else None)
        self._workdir_arg = Path(workdir) if workdir else None
        self.ready_delay = ready_delay
        self.running_delay = running_delay
        self.kwok_enabled = kwok
        self.keep_workdir = (
            keep_workdir if keep_workdir is not None else os.environ.get("E2E_KEEP_CLUSTER") == "1"
        )
        self.verbosity = verbosity
        self.pdeathsig = pdeathsig
        self.startup_timeout = startup_timeout
        self.workdir: Path | None = None
        self.procs: dict[str, _Proc] = {}
        self.ports: dict[str, int] = {}
        self._started = False
        self._atexit_registered = False

    # ------------------------------------------------------------------ paths
    def _p(self, *parts: str) -> Path:
        assert self.workdir is not None, "cluster not started"
        return self.workdir.joinpath(*parts)

    @property
    def kubeconfig_path(self) -> Path:
        return self._p("admin.kubeconfig")

    @property
    def ca_path(self) -> Path:
        return self._p("pki", "ca.crt")

    @property
    def admin_cert_path(self) -> Path:
        return self._p("pki", "admin.crt")

    @property
    def admin_key_path(self) -> Path:
        return self._p("pki", "admin.key")

    @property
    def server_url(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def logs_dir(self) -> Path:
        return self._p("logs")

    def env(self) -> dict[str, str]:
        """os.environ plus KUBECONFIG for subprocesses (kubectl, helm, the autoscaler)."""
        return {**os.environ, "KUBECONFIG": str(self.kubeconfig_path)}

    # ------------------------------------------------------------- lifecycle
    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> LocalCluster:
        if self._started:
            return self
        t0 = time.monotonic()
        if self._workdir_arg:
            self._workdir_arg.mkdir(parents=True, exist_ok=True)
            self.workdir = self._workdir_arg
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix="e2e-kube-"))
        self.logs_dir.mkdir(exist_ok=True)
        self._started = True
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        try:
            for name in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler", "kwok"):
                self.ports[name] = free_port()
            self._make_pki()
            self._write_kubeconfigs()
            self._start_etcd()
            self._start_apiserver()
            self._start_controller_manager()
            self._start_scheduler()
            self._wait_component_healthz("kube-controller-manager", self.ports["kcm"])
            self._wait_component_healthz("kube-scheduler", self.ports["scheduler"])
            # The service-account controller must have made the default SA before pods can be created.
            wait_until(
                lambda: self.core_v1().read_namespaced_service_account("default", "default"),
                self.startup_timeout, what="default/default service account",
            )
            if self.kwok_enabled:
                self._install_kwok_stages()
                self._start_kwok()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        for name in ("kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            p = self.procs.pop(name, None)
            if p is not None:
                p.stop()
        if self.workdir is not None and not self.keep_workdir and self._workdir_arg is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def restart_apiserver(self, downtime: float = 0.0) -> None:
        """Kill kube-apiserver (SIGKILL) and start it again on the same port, same etcd."""
        p = self.procs.pop("kube-apiserver")
        p.stop(sig=signal.SIGKILL)
        if downtime:
            time.sleep(downtime)
        self._start_apiserver()

    def stop_apiserver(self) -> None:
        """Kill kube-apiserver and leave it down (pair with :meth:`start_apiserver`)."""
        p = self.procs.pop("kube-apiserver")
        p.stop(sig=signal.SIGKILL)

    def start_apiserver(self) -> None:
        self._start_apiserver()

    def check_alive(self) -> None:
        for p in self.procs.values():
            p.check_alive()

    # ------------------------------------------------------------------- PKI
    def _make_pki(self) -> None:
        pki = self._p("pki")
        pki.mkdir(exist_ok=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
                 "-subj", "/CN=e2e-kubernetes-ca",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature", cwd=pki)

        def leaf(name: str, subj: str, ext: str) -> None:
            (pki / f"{name}.ext").write_text(ext)
            _openssl("req", "-new", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                     "-subj", subj, cwd=pki)
            _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                     "-CAcreateserial", "-days", "3650", "-out", f"{name}.crt",
                     "-extfile", f"{name}.ext", cwd=pki)

        first_service_ip = "10.0.0.1"
        leaf("apiserver", "/CN=kube-apiserver",
             "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
             "extendedKeyUsage=serverAuth\n"
             f"subjectAltName=IP:127.0.0.1,DNS:localhost,IP:{first_service_ip},DNS:kubernetes,"
             "DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n")
        client_ext = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                      "extendedKeyUsage=clientAuth\n")
        leaf("admin", "/O=system:masters/CN=admin", client_ext)
        leaf("controller-manager", "/CN=system:kube-controller-manager", client_ext)
        leaf("scheduler", "/CN=system:kube-scheduler", client_ext)
        # Aggregation layer (front proxy): lets components verify requestheader auth, and APIServices work.
        leaf("front-proxy-client", "/CN=front-proxy-client", client_ext)
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
        # A static token too, for clients that prefer bearer auth (user admin, group system:masters).
        self.admin_token = base64.b32encode(os.urandom(20)).decode().lower()
        (pki / "tokens.csv").write_text(f'{self.admin_token},admin-token,admin-token-uid,"system:masters"\n')

    def _kubeconfig(self, user: str, cert: str, key: str) -> dict[str, Any]:
        def b64(p: Path) -> str:
            return base64.b64encode(p.read_bytes()).decode()

        pki = self._p("pki")
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {
                "server": self.server_url, "certificate-authority-data": b64(pki / "ca.crt")}}],
            "users": [{"name": user, "user": {
                "client-certificate-data": b64(pki / cert), "client-key-data": b64(pki / key)}}],
            "contexts": [{"name": "e2e",
                          "context": {"cluster": "e2e", "user": user, "namespace": "default"}}],
            "current-context": "e2e",
        }

    def _write_kubeconfigs(self) -> None:
        for fname, user, stem in (
            ("admin.kubeconfig", "admin", "admin"),
            ("controller-manager.kubeconfig", "system:kube-controller-manager", "controller-manager"),
            ("scheduler.kubeconfig", "system:kube-scheduler", "scheduler"),
        ):
            path = self._p(fname)
            path.write_text(yaml.safe_dump(self._kubeconfig(user, f"{stem}.crt", f"{stem}.key")))
            path.chmod(0o600)

    # ------------------------------------------------------------- processes
    def _spawn(self, name: str, args: list[str]) -> _Proc:
        proc = _Proc(name, [str(self.bin_dir / name), *args], self.logs_dir / f"{name}.log", self.pdeathsig)
        self.procs[name] = proc
        return proc

    def _start_etcd(self) -> None:
        c, pe = self.ports["etcd"], self.ports["etcd_peer"]
        proc = self._spawn("etcd", [
            "--name=node0",
            f"--data-dir={self._p('etcd-data')}",
            f"--listen-client-urls=http://127.0.0.1:{c}",
            f"--advertise-client-urls=http://127.0.0.1:{c}",
            f"--listen-peer-urls=http://127.0.0.1:{pe}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{pe}",
            f"--initial-cluster=node0=http://127.0.0.1:{pe}",
            "--auto-compaction-retention=1",
            "--quota-backend-bytes=4294967296",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ])

        def healthy() -> bool:
            proc.check_alive()
            with urllib.request.urlopen(f"http://127.0.0.1:{c}/health", timeout=2) as r:
                return json.loads(r.read()).get("health") == "true"

        wait_until(healthy, self.startup_timeout, what="etcd /health")

    def _ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.ca_path))
        ctx.load_cert_chain(str(self.admin_cert_path), str(self.admin_key_path))
        return ctx

    def _start_apiserver(self) -> None:
        pki = self._p("pki")
        proc = self._spawn("kube-apiserver", [
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports['apiserver']}",
            f"--cert-dir={self._p('apiserver-certs')}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--token-auth-file={pki / 'tokens.csv'}",
            f"--requestheader-client-ca-file={pki / 'ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            # No kubelets and a loopback advertise address: don't maintain the kubernetes endpoints.
            "--endpoint-reconciler-type=none",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            f"--v={self.verbosity}",
        ])

        def ready() -> bool:
            proc.check_alive()
            req = urllib.request.Request(f"{self.server_url}/readyz")
            try:
                with urllib.request.urlopen(req, context=self._ssl_context(), timeout=3) as r:
                    return r.status == 200
            except urllib.error.HTTPError:
                return False

        wait_until(ready, self.startup_timeout, what="kube-apiserver /readyz")

    def _start_controller_manager(self) -> None:
        pki = self._p("pki")
        kc = self._p("controller-manager.kubeconfig")
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['kcm']}",
            f"--cert-dir={self._p('kcm-certs')}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--controllers=*,-nodeipam",
            "--node-monitor-grace-period=40s",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            "--concurrent-deployment-syncs=10",
            "--concurrent-replicaset-syncs=10",
            f"--v={self.verbosity}",
        ])

    def _start_scheduler(self) -> None:
        kc = self._p("scheduler.kubeconfig")
        self._spawn("kube-scheduler", [
            f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.ports['scheduler']}",
            f"--cert-dir={self._p('scheduler-certs')}",
            "--leader-elect=false",
            "--kube-api-qps=100",
            "--kube-api-burst=200",
            f"--v={self.verbosity}",
        ])

    def _wait_component_healthz(self, name: str, port: int) -> None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # self-signed serving cert of a loopback component

        def healthy() -> bool:
            self.procs[name].check_alive()
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=ctx, timeout=3) as r:
                return r.status == 200

        wait_until(healthy, self.startup_timeout, what=f"{name} /healthz")

    # ------------------------------------------------------------------ KWOK
    @property
    def kwok_kustomize_dir(self) -> Path:
        return self.bin_dir / "kwok-kustomize"

    def _install_kwok_stages(self) -> None:
        from kubernetes import client

        api = self.api_client()
        crd = yaml.safe_load(_stages.kwok_crd_path(self.kwok_kustomize_dir).read_text())
        ext = client.ApiextensionsV1Api(api)
        with contextlib.suppress(client.ApiException):
            ext.create_custom_resource_definition(crd)

        def established() -> bool:
            got = ext.read_custom_resource_definition(crd["metadata"]["name"])
            return any(c.type == "Established" and c.status == "True" for c in (got.status.conditions or []))

        wait_until(established, 30, what="kwok Stage CRD established")
        self.apply_stages(
            _stages.build_stages(
                self.kwok_kustomize_dir, ready_delay=self.ready_delay, running_delay=self.running_delay
            )
        )

    def apply_stages(self, stage_objs: list[dict[str, Any]]) -> None:
        """Create or replace KWOK Stage objects (cluster-scoped CRs); KWOK picks changes up live."""
        from kubernetes import client

        co = client.CustomObjectsApi(self.api_client())
        for st in stage_objs:
            name = st["metadata"]["name"]

            def put(st: dict[str, Any] = st, name: str = name) -> bool:
                try:
                    cur = co.get_cluster_custom_object("kwok.x-k8s.io", "v1alpha1", "stages", name)
                except client.ApiException as e:
                    if e.status != 404:
                        raise
                    co.create_cluster_custom_object("kwok.x-k8s.io", "v1alpha1", "stages", st)
                    return True
                body = {**st, "metadata": {**st["metadata"],
                                           "resourceVersion": cur["metadata"]["resourceVersion"]}}
                co.replace_cluster_custom_object("kwok.x-k8s.io", "v1alpha1", "stages", name, body)
                return True

            wait_until(put, 30, what=f"apply Stage {name}")

    def set_pod_delays(self, ready_delay: float, running_delay: float | None = None) -> None:
        """Change the cold-start delay for pods that start from now on."""
        self.ready_delay = ready_delay
        if running_delay is not None:
            self.running_delay = running_delay
        wanted = {"pod-ready", "pod-running"}
        self.apply_stages([
            s for s in _stages.build_stages(
                self.kwok_kustomize_dir, ready_delay=self.ready_delay, running_delay=self.running_delay
            ) if s["metadata"]["name"] in wanted
        ])

    def _start_kwok(self) -> None:
        cfg = self._p("kwok.yaml")
        cfg.write_text(yaml.safe_dump({
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            "options": {"enableCRDs": ["Stage"]},
        }))
        proc = self._spawn("kwok", [
            f"--kubeconfig={self.kubeconfig_path}",
            f"--config={cfg}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--enable-crds=Stage",
            "--node-ip=127.0.0.1",
            f"--node-port={self.ports['kwok']}",
            f"--server-address=127.0.0.1:{self.ports['kwok']}",
            "--node-lease-duration-seconds=40",
            "--cidr=10.16.0.1/16",
        ])

        def healthy() -> bool:
            proc.check_alive()
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['kwok']}/healthz", timeout=2) as r:
                return r.status == 200

        wait_until(healthy, 30, what="kwok /healthz (plain HTTP: no --tls-cert-file)")

    # --------------------------------------------------------------- clients
    def api_client(self) -> Any:
        """A new ``kubernetes.client.ApiClient`` for the admin user."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig_path))

    def core_v1(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api_client())

    def apps_v1(self) -> Any:
        from kubernetes import client

        return client.AppsV1Api(self.api_client())

    def kubectl(
        self, *args: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise ClusterError("kubectl not found on PATH")
        return subprocess.run([kubectl, f"--kubeconfig={self.kubeconfig_path}", *args],
                              capture_output=True, text=True, check=check, timeout=timeout)

    # ------------------------------------------------------------------ nodes
    def add_gpu_node(
        self,
        name: str,
        gpus: int = 8,
        labels: dict[str, str] | None = None,
        *,
        cpu: str = "96",
        memory: str = "1024Gi",
        pods: int = 110,
        gpu_product: str = "NVIDIA-H100-80GB-HBM3",
        taints: list[dict[str, str]] | None = None,
        annotations: dict[str, str] | None = None,
        wait_ready: bool = True,
        timeout: float = 30.0,
    ) -> Any:
        """Create a KWOK-managed fake node with ``nvidia.com/gpu`` capacity; wait until Ready."""
        from kubernetes import client

        all_labels = {
            "type": "kwok",
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/role": "agent",
            "node.kubernetes.io/instance-type": f"kwok-gpu-{gpus}",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": gpu_product,
            "nvidia.com/gpu.count": str(gpus),
            **(labels or {}),
        }
        resources = {"cpu": cpu, "memory": memory, "pods": str(pods), GPU_RESOURCE: str(gpus)}
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": all_labels,
                "annotations": {**KWOK_ANNOTATION, "node.alpha.kubernetes.io/ttl": "0",
                                **(annotations or {})},
            },
            "spec": {"taints": [KWOK_TAINT] if taints is None else taints},
            "status": {"capacity": resources, "allocatable": resources},
        }
        core = client.CoreV1Api(self.api_client())
        node = core.create_node(body)
        if wait_ready:
            node = wait_until(lambda: self._node_if_ready(core, name), timeout, what=f"node {name} Ready")
        return node

    @staticmethod
    def _node_if_ready(core: Any, name: str) -> Any:
        n = core.read_node(name)
        ok = any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
        gpu_ok = (n.status.allocatable or {}).get(GPU_RESOURCE) not in (None, "0")
        return n if ok and gpu_ok else None

    def delete_node(self, name: str) -> None:
        from kubernetes import client

        with contextlib.suppress(client.ApiException):
            client.CoreV1Api(self.api_client()).delete_node(name)

    def kwok_nodes(self) -> list[Any]:
        return list(self.core_v1().list_node(label_selector="type=kwok").items)

    def logs(self) -> Iterator[tuple[str, str]]:
        for name, p in self.procs.items():
            yield name, p.tail()
