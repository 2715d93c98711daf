#!/usr/bin/env bash
# Build the e2e control plane from source with the Go toolchain (modules come from wherever `go env GOPROXY`
# points: set GOPROXY/GOFLAGS in your environment or `go env -w` for a mirror or an offline module cache):
#   kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes, see
#   tests/e2e/cluster/kubebuild/go.mod), etcd (the version kubernetes pins) and kwok.
# Idempotent: a binary is rebuilt only when its stamp (inputs hash) changes.
#   KUBE_BIN_DIR   output dir (default ~/.cache/inference-autoscaler/kube-bin)
#   KWOK_VERSION   kwok module version (default v0.7.0)
#   BUILD_JOBS     go build -p (default 2)
#   FORCE=1        rebuild everything
# A cold build (nothing cached) downloads ~0.8 GB of modules, fills ~3 GB of Go build cache and takes
# 15-30 minutes on 2 cores (30 measured on 2 cores shared with other jobs); later runs take seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_MOD="$ROOT/tests/e2e/cluster/kubebuild"
KUBE_BIN_DIR="${KUBE_BIN_DIR:-$HOME/.cache/inference-autoscaler/kube-bin}"
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
BUILD_JOBS="${BUILD_JOBS:-2}"
export PATH="$PATH:/usr/local/go/bin"
export GOFLAGS="-buildvcs=false -p=${BUILD_JOBS}"
export CGO_ENABLED=0

command -v go >/dev/null || { echo "build-kube: go not found (expected /usr/local/go/bin/go; needs Go >= 1.24)" >&2; exit 1; }
echo "build-kube: $(go env GOVERSION), modules from GOPROXY=$(go env GOPROXY), binaries in $KUBE_BIN_DIR"
mkdir -p "$KUBE_BIN_DIR"
TIMES="$KUBE_BIN_DIR/build-times.txt"

cd "$BUILD_MOD"
KUBE_VERSION=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
ETCD_VERSION=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
GO_VERSION=$(go env GOVERSION)
MOD_HASH=$(cat go.mod go.sum | sha256sum | cut -c1-16)
minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
pkgs="k8s.io/component-base/version k8s.io/client-go/pkg/version"
LDFLAGS="-s -w"
for p in $pkgs; do
  LDFLAGS+=" -X $p.gitVersion=${KUBE_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor}"
  LDFLAGS+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

# Rough cold-build times on 2 cores, module downloads included (kwok fetches its own module set).
declare -A EXPECT=([kube-apiserver]="~6-10 min" [kube-controller-manager]="~5-8 min" [kube-scheduler]="~1 min"
                   [etcd]="~1 min" [kwok]="~2-11 min")

# build NAME STAMP CMD...: run CMD unless $KUBE_BIN_DIR/NAME exists with the same stamp.
build() {
  local name=$1 stamp=$2; shift 2
  local sf="$KUBE_BIN_DIR/.stamp-$name"
  if [[ -z "${FORCE:-}" && -x "$KUBE_BIN_DIR/$name" && -f "$sf" && "$(cat "$sf")" == "$stamp" ]]; then
    echo "build-kube: $name up to date ($stamp)"
    return 0
  fi
  local last
  last=$(awk -v n="$name" '$2 == n {t = $4} END {print t}' "$TIMES" 2>/dev/null || true)
  echo "build-kube: building $name ($stamp); ${EXPECT[$name]:-a few minutes} on 2 cores${last:+ (last build here: $last)} ..."
  local t0=$SECONDS
  "$@"
  local dt=$((SECONDS - t0))
  echo "$stamp" > "$sf"
  echo "build-kube: built $name in ${dt}s"
  echo "$(date -u +%FT%TZ) $name $stamp ${dt}s" >> "$TIMES"
}

for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  build "$cmd" "$KUBE_VERSION/$GO_VERSION/$MOD_HASH" \
    go build -trimpath -ldflags "$LDFLAGS" -o "$KUBE_BIN_DIR/$cmd" "k8s.io/kubernetes/cmd/$cmd"
done
build etcd "$ETCD_VERSION/$GO_VERSION/$MOD_HASH" \
  go build -trimpath -ldflags "-s -w" -o "$KUBE_BIN_DIR/etcd" go.etcd.io/etcd/server/v3
# kwok has no replace directives, so `go install pkg@version` uses its own go.sum (reproducible).
build kwok "$KWOK_VERSION/$GO_VERSION" \
  env GOBIN="$KUBE_BIN_DIR" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"

# KWOK CRDs and default stages ship in the kwok module source; copy them next to the binaries.
KWOK_SRC=$(cd "$KUBE_BIN_DIR" && go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
if [[ -z "$KWOK_SRC" || ! -d "$KWOK_SRC/kustomize" ]]; then
  echo "build-kube: could not locate kwok module source for ${KWOK_VERSION}" >&2; exit 1
fi
rm -rf "$KUBE_BIN_DIR/kwok-kustomize"
cp -r "$KWOK_SRC/kustomize" "$KUBE_BIN_DIR/kwok-kustomize"
chmod -R u+w "$KUBE_BIN_DIR/kwok-kustomize"
echo "$KWOK_VERSION" > "$KUBE_BIN_DIR/kwok-kustomize/VERSION"

echo "build-kube: binaries in $KUBE_BIN_DIR"
for b in kube-apiserver kube-controller-manager kube-scheduler etcd kwok; do
  printf '  %-24s %s\n' "$b" "$("$KUBE_BIN_DIR/$b" --version 2>/dev/null | head -1 || echo '?')"
done
