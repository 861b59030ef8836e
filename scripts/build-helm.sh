#!/usr/bin/env bash
# Builds helm from the helm.sh/helm/v3 Go module, once, into the same cache as
# scripts/build-kube.sh (the chart tests run `helm lint` and `helm template` with it).
# A few minutes on 2 cores. Usage: scripts/build-helm.sh
set -euo pipefail

HELM_VERSION="${DRASCHED_HELM_VERSION:-v3.22.0}"
CACHE="${DRASCHED_CACHE:-$HOME/.cache/drasched}"
BIN="$CACHE/helm-$HELM_VERSION/bin"
WORK="$CACHE/helm-$HELM_VERSION/module"

export GOTOOLCHAIN=local
export GOFLAGS=-mod=mod
export CGO_ENABLED=0

if [ -x "$BIN/helm" ]; then
  echo "build-helm: helm $HELM_VERSION already cached in $BIN"
  exit 0
fi
mkdir -p "$BIN" "$WORK"
cd "$WORK"
if [ ! -f go.mod ]; then
  printf 'module drasched.local/helmbuild\n\ngo 1.26\n\nrequire helm.sh/helm/v3 %s\n' "$HELM_VERSION" > go.mod
  printf '//go:build tools\n\npackage helmbuild\n\nimport _ "helm.sh/helm/v3/cmd/helm"\n' > tools.go
  echo "build-helm: resolving modules for helm.sh/helm/v3 $HELM_VERSION"
  go mod tidy -e >/dev/null 2>&1 || true
fi
echo "build-helm: building helm $HELM_VERSION"
start=$(date +%s)
go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
  -o "$BIN/helm.tmp" helm.sh/helm/v3/cmd/helm
mv "$BIN/helm.tmp" "$BIN/helm"
echo "build-helm: helm built in $(( $(date +%s) - start ))s"
