#!/usr/bin/env bash
# Regenerate the committed Python stubs of the kubelet plugin protos
# (src/drasched/node/proto/*.proto -> *_pb2.py, *_pb2.pyi, *_pb2_grpc.py) with the
# grpcio-tools pinned in pyproject.toml. tests/unit/node/test_proto.py fails when the
# committed stubs differ from what this produces.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
exec "$PY" -m drasched.node.proto.gen
