"""CDI (Container Device Interface) spec files for prepared claims.

A DRA driver hands devices to containers by writing a CDI spec and answering
``NodePrepareResources`` with fully qualified CDI device IDs (``vendor/class=name``); the
container runtime resolves those IDs through the spec files in its CDI directories
(``/var/run/cdi`` for transient specs). One spec file per prepared claim, named after the
claim UID, makes unprepare a single file removal and keeps claims from clashing: device
names inside it carry the claim UID too, because a runtime refuses two specs that define
the same qualified device.

Every spec is checked before it is written, against ``cdi_schema.json`` (the upstream
schema's subset we write, with the upstream parser's name rules) and against the version
rules of the upstream library (a spec must declare a ``cdiVersion`` that covers the
features it uses). The version written is the lowest that covers the spec, as the
upstream Go library computes it, so older runtimes accept it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

Obj = dict[str, Any]

SCHEMA_PATH = Path(__file__).with_name("cdi_schema.json")
KNOWN_VERSIONS = ("0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0")
DEFAULT_CDI_DIR = "/var/run/cdi"

_VENDOR_RE = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
_CLASS_RE = _VENDOR_RE
_DEVICE_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")


class CDIError(ValueError):
    """A spec that a container runtime would reject; the message names the field."""


@dataclass
class ContainerEdits:
    """What one device adds to a container: environment, device nodes, mounts."""

    env: dict[str, str] = field(default_factory=dict)
    device_nodes: list[Obj] = field(default_factory=list)
    """``{"path": ..., "hostPath"?: ..., "type"?: "c", "major"?, "minor"?, "permissions"?: "rw"}``"""
    mounts: list[Obj] = field(default_factory=list)
    """``{"hostPath": ..., "containerPath": ..., "options"?: [...], "type"?: ...}``"""

    def to_wire(self) -> Obj:
        out: Obj = {}
        if self.env:
            out["env"] = [f"{k}={v}" for k, v in sorted(self.env.items())]
        if self.device_nodes:
            out["deviceNodes"] = [dict(d) for d in self.device_nodes]
        if self.mounts:
            out["mounts"] = [dict(m) for m in self.mounts]
        return out


@cache
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _all_edits(spec: Obj) -> list[Obj]:
    edits = [d.get("containerEdits") or {} for d in spec.get("devices") or [] if isinstance(d, dict)]
    return [*edits, spec.get("containerEdits") or {}]


def minimum_version(spec: Obj) -> str:
    """The lowest spec version covering the features ``spec`` uses (upstream ``MinimumRequiredVersion``)."""
    edits = _all_edits(spec)
    devices = [d for d in spec.get("devices") or [] if isinstance(d, dict)]
    if any(e.get("additionalGIDs") or e.get("intelRdt") for e in edits):
        return "0.7.0"
    _, _, cls = str(spec.get("kind", "")).partition("/")
    if spec.get("annotations") or any(d.get("annotations") for d in devices) or "." in cls:
        return "0.6.0"
    if any(str(d.get("name", ""))[:1].isdigit() for d in devices) or any(
        n.get("hostPath") for e in edits for n in e.get("deviceNodes") or []
    ):
        return "0.5.0"
    if any(m.get("type") for e in edits for m in e.get("mounts") or []):
        return "0.4.0"
    return "0.3.0"


def validate_spec(spec: Obj) -> None:
    """Raise ``CDIError`` naming every problem that a runtime's CDI registry would reject."""
    problems = []
    for err in sorted(_validator().iter_errors(spec), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in err.absolute_path) or "(spec)"
        problems.append(f"{where}: {err.message}")
    if not problems:
        version = spec["cdiVersion"]
        need = minimum_version(spec)
        if _version_key(need) > _version_key(version):
            problems.append(f"cdiVersion: the spec uses features of {need} but declares {version}")
        names = [d["name"] for d in spec["devices"]]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            problems.append(f"devices: duplicate device name(s) {', '.join(dupes)}")
    if problems:
        raise CDIError("invalid CDI spec: " + "; ".join(problems))


def qualified_name(vendor: str, cls: str, name: str) -> str:
    """The fully qualified CDI device ID a runtime resolves: ``vendor/class=name``."""
    return f"{vendor}/{cls}={name}"


def device_name(claim_uid: str, device: str, share_id: str = "") -> str:
    """The CDI device name of one prepared device of a claim; unique across claims."""
    raw = f"{claim_uid}-{device}" + (f"-{share_id}" if share_id else "")
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", raw)


class CDIWriter:
    """Builds, validates and (when ``cdi_dir`` is set) writes one spec file per claim.

    With ``cdi_dir=None`` (embedded simulation) specs are built and validated but kept in
    memory, so the simulation exercises the same code and returns the same IDs without
    touching the host.
    """

    def __init__(self, vendor: str, cls: str, cdi_dir: str | os.PathLike[str] | None = None) -> None:
        if not _VENDOR_RE.match(vendor):
            raise CDIError(f"invalid CDI vendor {vendor!r}: letters, digits, '_', '-', '.', starting with a letter")
        if not _CLASS_RE.match(cls):
            raise CDIError(f"invalid CDI class {cls!r}: letters, digits, '_', '-', '.', starting with a letter")
        self.vendor = vendor
        self.cls = cls
        self.kind = f"{vendor}/{cls}"
        self.cdi_dir = Path(cdi_dir) if cdi_dir is not None else None
        self.specs: dict[str, Obj] = {}
        """Claim UID -> the spec last written for it (kept in memory in both modes)."""

    def spec_path(self, claim_uid: str) -> Path | None:
        if self.cdi_dir is None:
            return None
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", claim_uid)
        return self.cdi_dir / f"{self.vendor}-{self.cls}_{safe}.json"

    def build_spec(self, devices: list[tuple[str, ContainerEdits]]) -> Obj:
        """A spec of ``(CDI device name, edits)`` pairs at the lowest version that covers it."""
        spec: Obj = {
            "cdiVersion": "",
            "kind": self.kind,
            "devices": [{"name": n, "containerEdits": e.to_wire()} for n, e in devices],
        }
        for d in devices:
            if not _DEVICE_RE.match(d[0]):
                raise CDIError(f"invalid CDI device name {d[0]!r}")
        spec["cdiVersion"] = minimum_version(spec)
        return spec

    def write_claim(self, claim_uid: str, devices: list[tuple[str, ContainerEdits]]) -> list[str]:
        """Validate and write the claim's spec (atomically); returns the qualified IDs in order."""
        spec = self.build_spec(devices)
        validate_spec(spec)
        path = self.spec_path(claim_uid)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(spec, f, indent=2, sort_keys=False)
                    f.write("\n")
                os.chmod(tmp, 0o644)
                os.replace(tmp, path)  # a runtime never sees half a spec
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        self.specs[claim_uid] = spec
        return [qualified_name(self.vendor, self.cls, n) for n, _ in devices]

    def remove_claim(self, claim_uid: str) -> None:
        """Remove the claim's spec; removing one that is not there is fine (unprepare repeats)."""
        self.specs.pop(claim_uid, None)
        path = self.spec_path(claim_uid)
        if path is not None:
            path.unlink(missing_ok=True)
