#!/usr/bin/env bash
# Sets up everything the test suite needs on a fresh machine, then runs it:
# a virtualenv with drasched and its dev tools, etcd from Debian, and kube-apiserver
# built once from the k8s.io/kubernetes Go module (cached in ~/.cache/drasched).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== python environment"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[dev]'

echo "== etcd"
if ! command -v etcd >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null
  fi
fi
command -v etcd >/dev/null || { echo "etcd is required (Debian package etcd-server)"; exit 1; }
systemctl stop etcd >/dev/null 2>&1 || true   # the package starts a system etcd we do not use

echo "== kube-apiserver"
scripts/build-kube.sh kube-apiserver

echo "== lint and types"
.venv/bin/ruff check src tests
.venv/bin/mypy

echo "== tests"
exec .venv/bin/pytest -q "$@"
