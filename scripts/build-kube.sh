#!/usr/bin/env bash
# Builds the upstream Kubernetes binaries our tests and benchmarks run against
# (kube-apiserver, and on request kube-scheduler / kube-controller-manager) from
# the k8s.io/kubernetes Go module, once, into a cache outside the repository.
# Only what is missing is built. Usage: scripts/build-kube.sh [BINARY...]
# DRASCHED_KUBE_VERSION picks the release (v1.37.2 by default; v1.36.3 still builds). Both
# releases' go.mod ask for Go 1.26, so the installed toolchain builds them (GOTOOLCHAIN=local).
set -euo pipefail

KUBE_VERSION="${DRASCHED_KUBE_VERSION:-v1.37.2}"
STAGING_VERSION="v0${KUBE_VERSION#v1}"
CACHE="${DRASCHED_CACHE:-$HOME/.cache/drasched}"
BIN="$CACHE/kube-$KUBE_VERSION/bin"
WORK="$CACHE/kube-$KUBE_VERSION/module"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kube-apiserver)

export GOTOOLCHAIN=local   # a Go 1.27 build serves broken OpenAPI documents
export GOFLAGS=-mod=mod
export CGO_ENABLED=0

missing=()
for t in "${targets[@]}"; do
  [ -x "$BIN/$t" ] || missing+=("$t")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "build-kube: ${targets[*]} already cached in $BIN"
  exit 0
fi

mkdir -p "$BIN" "$WORK"
cd "$WORK"
if [ ! -f go.mod ]; then
  staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
    cloud-provider cluster-bootstrap code-generator component-base component-helpers
    controller-manager cri-api cri-client cri-streaming csi-translation-lib
    dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
    kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
    mount-utils pod-security-admission sample-apiserver sample-cli-plugin
    sample-controller streaming)
  {
    echo "module drasched.local/kubebuild"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do echo "	k8s.io/$m => k8s.io/$m $STAGING_VERSION"; done
    echo ")"
  } > go.mod
  cat > tools.go <<'GO'
//go:build tools

package kubebuild

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  echo "build-kube: resolving modules for k8s.io/kubernetes $KUBE_VERSION"
  go mod tidy -e >/dev/null 2>&1 || true
fi

for t in "${missing[@]}"; do
  echo "build-kube: building $t $KUBE_VERSION (first build takes 20-30 minutes on 2 cores)"
  start=$(date +%s)
  go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)" \
    -o "$BIN/$t.tmp" "k8s.io/kubernetes/cmd/$t"
  mv "$BIN/$t.tmp" "$BIN/$t"
  echo "build-kube: $t built in $(( $(date +%s) - start ))s"
done
