#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs what the tests need (the package with its dev
# extras, Debian's Prometheus, a real helm, the Kubernetes control plane built from the Go module proxy
# and cached), checks lint and types, then runs every test. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n==> %s\n' "$*"; }

step "python dependencies"
PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check -e '.[dev]'
for tool in install-prometheus install-helm build-kube; do
  if [ -f ".ci/$tool.sh" ]; then step "$tool"; bash ".ci/$tool.sh"; fi
done

step "ruff"
python3 -m ruff check .
step "mypy"
python3 -m mypy autoscaler forecasting simulations
step "pytest"
python3 -m pytest tests "$@"
