"""Generate the Python stubs of the kubelet plugin protos (``python -m drasched.node.proto.gen``).

Why committed stubs rather than generating at import time: an installed drasched then
needs only ``grpcio`` and ``protobuf`` at run time (no compiler, no writable cache, no
first-import race between processes). The price is keeping them in step with the
``.proto`` files; ``tests/unit/node/test_proto.py`` regenerates them into a temp dir and
fails when they differ, and ``scripts/gen-proto.sh`` rewrites them in place.

protoc runs with ``src`` as its include root so the generated ``_pb2_grpc`` modules
import their messages as ``drasched.node.proto.<name>_pb2`` (a package import), not as
top-level modules.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
SRC_ROOT = PROTO_DIR.parents[2]
PROTOS = ("dra_v1.proto", "dra_v1beta1.proto", "pluginregistration_v1.proto")


def generate(out_root: Path) -> list[Path]:
    """Run protoc (from grpcio-tools) over every proto; returns the files written under ``out_root``."""
    from grpc_tools import protoc  # a build-time tool: imported only here

    out_root.mkdir(parents=True, exist_ok=True)
    include = str(Path(protoc.__file__).parent / "_proto")
    rel = [str((PROTO_DIR / p).relative_to(SRC_ROOT)) for p in PROTOS]
    args = ["protoc", f"-I{SRC_ROOT}", f"-I{include}", f"--python_out={out_root}", f"--pyi_out={out_root}",
            f"--grpc_python_out={out_root}", *rel]
    rc = protoc.main(args)
    if rc != 0:
        raise RuntimeError(f"protoc failed with exit code {rc}")
    pkg = out_root / PROTO_DIR.relative_to(SRC_ROOT)
    return sorted(p for p in pkg.iterdir() if p.name.endswith(("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")))


def main() -> int:
    written = generate(SRC_ROOT)
    for p in written:
        print(p.relative_to(SRC_ROOT))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
