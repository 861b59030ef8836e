#!/usr/bin/env bash
# Builds etcd (the version kube-apiserver 1.36 is tested with; 1.37's is 3.7.0, and 3.6.8 serves
# it here: the contract and e2e suites pass on it) from the go.etcd.io/etcd
# Go module, once, into the same cache as scripts/build-kube.sh. Debian's etcd 3.4.23 is
# too old: it lacks the RequestWatchProgress RPC, so kube-apiserver 1.36 answers a list at
# a resourceVersion of an idle resource with "504 Too large resource version" after 3s.
# About 30 s on 2 cores. Usage: scripts/build-etcd.sh
set -euo pipefail

ETCD_VERSION="${DRASCHED_ETCD_VERSION:-v3.6.8}"
CACHE="${DRASCHED_CACHE:-$HOME/.cache/drasched}"
BIN="$CACHE/etcd-$ETCD_VERSION/bin"
WORK="$CACHE/etcd-$ETCD_VERSION/module"

export GOTOOLCHAIN=local
export GOFLAGS=-mod=mod
export CGO_ENABLED=0

if [ -x "$BIN/etcd" ]; then
  echo "build-etcd: etcd $ETCD_VERSION already cached in $BIN"
  exit 0
fi
mkdir -p "$BIN" "$WORK"
cd "$WORK"
if [ ! -f go.mod ]; then
  printf 'module drasched.local/etcdbuild\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > go.mod
  printf '//go:build tools\n\npackage etcdbuild\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
  echo "build-etcd: resolving modules for go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  go mod tidy -e >/dev/null 2>&1 || true
fi
echo "build-etcd: building etcd $ETCD_VERSION"
start=$(date +%s)
go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" go.etcd.io/etcd/server/v3
mv "$BIN/etcd.tmp" "$BIN/etcd"
echo "build-etcd: etcd built in $(( $(date +%s) - start ))s"
