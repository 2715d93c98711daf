"""`helm install` the project's chart with the real helm binary, and read back what it rendered."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .tools import require_tool

CHART_DIR = Path(__file__).resolve().parents[3] / "charts" / "inference-autoscaler"


class HelmError(RuntimeError):
    pass


@dataclass
class HelmRelease:
    name: str
    namespace: str
    kubeconfig: Path
    values: dict[str, Any] = field(default_factory=dict)
    chart: Path = CHART_DIR

    def _helm(self, *args: str, timeout: float = 120) -> str:
        helm = require_tool("helm")
        cmd = [helm, f"--kubeconfig={self.kubeconfig}", "--namespace", self.namespace, *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise HelmError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr.strip() or r.stdout.strip()}")
        return r.stdout

    def install(self, workdir: Path) -> str:
        values_file = workdir / f"{self.name}-values.yaml"
        values_file.write_text(yaml.safe_dump(self.values))
        return self._helm("install", self.name, str(self.chart), "--create-namespace",
                          "--values", str(values_file), "--wait", "--timeout", "90s")

    def uninstall(self) -> None:
        self._helm("uninstall", self.name, "--wait", "--timeout", "60s")

    def manifest(self) -> list[dict[str, Any]]:
        return [d for d in yaml.safe_load_all(self._helm("get", "manifest", self.name)) if d]

    def status(self) -> str:
        return self._helm("status", self.name)

    def find(self, kind: str) -> list[dict[str, Any]]:
        return [d for d in self.manifest() if d.get("kind") == kind]

    @property
    def service_account(self) -> str:
        (sa,) = self.find("ServiceAccount")
        return str(sa["metadata"]["name"])

    def controller_args(self) -> list[str]:
        """The arguments the chart's Deployment gives the controller container (`run ...`)."""
        (dep,) = self.find("Deployment")
        (container,) = dep["spec"]["template"]["spec"]["containers"]
        return [str(a) for a in container["args"]]
