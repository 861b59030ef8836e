#!/usr/bin/env bash
# Sets up everything the test suite needs on a fresh machine, then runs it:
# a virtualenv with drasched and its dev tools, and etcd and kube-apiserver built once
# from their Go modules with the machine's Go (cached in ~/.cache/drasched).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== python environment"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -e '.[dev]'

echo "== etcd (built from the go.etcd.io module: Debian's 3.4 is too old for kube-apiserver 1.36+)"
scripts/build-etcd.sh

echo "== kube-apiserver (and upstream kube-scheduler + kube-controller-manager: benchmark peer; the Job controller of the implicit-gang e2e test)"
scripts/build-kube.sh kube-apiserver kube-scheduler kube-controller-manager

echo "== helm (built from the helm.sh/helm/v3 module: the chart tests run helm lint and helm template)"
scripts/build-helm.sh

echo "== chromium (Debian's: the HTML report is opened in it; playwright drives it, downloads no browser)"
command -v chromium >/dev/null || { sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo; $sudo apt-get update -q && $sudo apt-get install -y -q chromium; }

echo "== lint and types"
.venv/bin/ruff check src tests
.venv/bin/mypy
.venv/bin/lint-imports  # the layers of docs/architecture.md (pyproject.toml [tool.importlinter])

echo "== tests"
exec .venv/bin/pytest -q "$@"
