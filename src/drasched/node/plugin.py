"""The kubelet plugin kit: NodePrepareResources / NodeUnprepareResources for one driver on one node.

Everything here is plain Python: the gRPC servicers (``drasched.node.server``) and the
embedded simulation (``drasched.node.inprocess``) call the same two methods, so a
simulation exercises exactly the checks a real kubelet would hit.

The rules (upstream ``kubeletplugin`` helper semantics, plus the checks a scheduler bug
would otherwise slip past, since the API server does not make them):

* the claim is read from the ClusterStore; it must exist with the UID the kubelet named
  and be allocated, with at least one result for this driver, in a pool this driver
  publishes on this node, naming a device it publishes;
* a device is held by one prepared claim at a time unless it allows multiple
  allocations (then one per share ID, and consumed capacity must fit) or the result is
  admin access; devices that consume shared counters must fit the counters left;
* a claim fails or succeeds as a whole: a failure undoes what was done for it and is
  reported in that claim's ``error``, never as an RPC error, so other claims proceed;
* prepare of a prepared claim returns the same answer; unprepare of an unknown claim
  succeeds: the kubelet retries both freely;
* calls are serialized per driver (one lock per plugin), as the kubelet expects;
* with a ``state_dir`` the prepared claims are checkpointed, so a restarted driver still
  answers repeated calls and still knows which devices are held.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import msgspec

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.api.resource import ResourceClaim, decode
from drasched.node.cdi import CDIError, CDIWriter, device_name
from drasched.node.driver import AllocatedDevice, ClaimRef, ConfigError, Driver, PoolSpec
from drasched.node.resource_health import DeviceHealth
from drasched.quantity import Format, Quantity, QuantityError
from drasched.store.base import ClusterStore

Obj = dict[str, Any]
CHECKPOINT_VERSION = 1


@dataclass(frozen=True)
class PreparedDevice:
    """One device of a prepare answer (``Device`` in the kubelet API)."""

    request_names: tuple[str, ...]
    pool_name: str
    device_name: str
    cdi_device_ids: tuple[str, ...]
    share_id: str = ""


@dataclass(frozen=True)
class PrepareResult:
    """The answer for one claim: its devices, or a non-empty ``error``."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


@dataclass
class _Prepared:
    ref: ClaimRef
    devices: list[AllocatedDevice]
    result: PrepareResult


@dataclass
class _Inventory:
    """What this plugin publishes, indexed for the ownership and capacity checks."""

    devices: dict[tuple[str, str], Obj] = field(default_factory=dict)
    counters: dict[tuple[str, str], dict[str, Fraction]] = field(default_factory=dict)


def _qty(v: Any) -> Fraction:
    return Quantity.parse(v).value


def _base_request(request: str) -> str:
    return request.split("/", 1)[0]


class KubeletPlugin:
    """One driver's kubelet plugin on one node (what a DRA driver's DaemonSet pod runs).

    ``cdi_dir=None`` keeps CDI specs in memory (embedded mode); ``state_dir=None`` keeps no
    checkpoint. The CDI kind defaults to ``k8s.<driver>/claim``.
    """

    def __init__(
        self,
        store: ClusterStore,
        driver: Driver,
        node_name: str,
        *,
        cdi_dir: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        cdi_vendor: str | None = None,
        cdi_class: str = "claim",
    ) -> None:
        self.store = store
        self.driver = driver
        self.node_name = node_name
        self.cdi = CDIWriter(cdi_vendor or f"k8s.{driver.name}", cdi_class, cdi_dir)
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self._lock = threading.Lock()
        self._prepared: dict[str, _Prepared] = {}
        self._inventory = _Inventory()
        self.refresh_inventory()
        self._load_checkpoint()

    @property
    def driver_name(self) -> str:
        return self.driver.name

    def device_health(self, pool: str, device: str) -> DeviceHealth | None:
        """What the driver's DRAResourceHealth stream says about a device (None: no such service)."""
        return self.driver.device_health(pool, device)

    # ---- inventory -------------------------------------------------------------------------
    def pools(self) -> dict[str, PoolSpec]:
        """The pools the driver declares for this node (what the publisher publishes)."""
        return self.driver.pools(self.node_name)

    def refresh_inventory(self, pools: dict[str, PoolSpec] | None = None) -> None:
        """Re-read the driver's devices, e.g. after a hot-plug and before republishing."""
        pools = self.pools() if pools is None else pools
        inv = _Inventory()
        for pool_name, pool in pools.items():
            for dev in pool.devices:
                inv.devices[(pool_name, dev["name"])] = dev
            for cs in pool.shared_counters:
                inv.counters[(pool_name, cs["name"])] = {
                    k: _qty(c["value"]) for k, c in (cs.get("counters") or {}).items()
                }
        with self._lock:
            self._inventory = inv

    # ---- the two calls ---------------------------------------------------------------------
    def node_prepare_resources(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]:
        """Prepare each claim; one entry per claim UID, errors per claim."""
        with self._lock:
            out: dict[str, PrepareResult] = {}
            for ref in claims:
                out[ref.uid] = self._prepare_one(ref)
            return out

    def node_unprepare_resources(self, claims: Sequence[ClaimRef]) -> dict[str, str]:
        """Unprepare each claim; one entry per claim UID, the empty string meaning success."""
        with self._lock:
            out: dict[str, str] = {}
            changed = False
            for ref in claims:
                prepared = self._prepared.get(ref.uid)
                if prepared is None:
                    out[ref.uid] = ""  # never prepared, or already unprepared
                    continue
                try:
                    self.driver.unprepare(prepared.ref, prepared.devices)
                    self.cdi.remove_claim(ref.uid)
                except Exception as exc:  # the kubelet retries; keep the claim prepared until then
                    out[ref.uid] = f"unprepare {ref}: {exc}"
                    continue
                del self._prepared[ref.uid]
                changed = True
                out[ref.uid] = ""
            if changed:
                self._save_checkpoint()
            return out

    def prepared_claims(self) -> dict[str, PrepareResult]:
        """Claim UID -> answer, for every claim now prepared."""
        with self._lock:
            return {uid: p.result for uid, p in self._prepared.items()}

    # ---- prepare, one claim ----------------------------------------------------------------
    def _prepare_one(self, ref: ClaimRef) -> PrepareResult:
        done = self._prepared.get(ref.uid)
        if done is not None:
            return done.result
        try:
            devices = self._allocated_devices(ref)
            self._check_available(ref, devices)
        except _ClaimError as exc:
            return PrepareResult(error=str(exc))
        edits = []
        try:
            for dev in devices:
                edits.append((device_name(ref.uid, dev.device, dev.share_id), self.driver.prepare(ref, dev)))
            ids = self.cdi.write_claim(ref.uid, edits)
        except (ConfigError, CDIError) as exc:
            self._undo(ref, devices)
            return PrepareResult(error=f"prepare {ref}: {exc}")
        except Exception as exc:  # a driver bug must not take the plugin down
            self._undo(ref, devices)
            return PrepareResult(error=f"prepare {ref}: {type(exc).__name__}: {exc}")
        result = PrepareResult(devices=tuple(
            PreparedDevice((dev.request,), dev.pool, dev.device, (cdi_id,), dev.share_id)
            for dev, cdi_id in zip(devices, ids, strict=True)
        ))
        self._prepared[ref.uid] = _Prepared(ref, devices, result)
        self._save_checkpoint()
        return result

    def _undo(self, ref: ClaimRef, devices: list[AllocatedDevice]) -> None:
        try:
            self.driver.unprepare(ref, devices)
        finally:
            self.cdi.remove_claim(ref.uid)

    def _allocated_devices(self, ref: ClaimRef) -> list[AllocatedDevice]:
        """This driver's results of the claim, checked against the store and the inventory."""
        try:
            raw = self.store.get(kinds.RESOURCE_CLAIM, ref.name, ref.namespace)
        except NotFound:
            raise _ClaimError(f"ResourceClaim {ref} not found") from None
        except ApiError as exc:
            raise _ClaimError(f"reading ResourceClaim {ref}: {exc}") from None
        uid = (raw.get("metadata") or {}).get("uid", "")
        if uid != ref.uid:
            raise _ClaimError(f"ResourceClaim {ref} has UID {uid}, not {ref.uid}: it was deleted and recreated")
        try:
            claim = decode(raw, ResourceClaim)
        except msgspec.ValidationError as exc:
            raise _ClaimError(f"ResourceClaim {ref} is malformed: {exc}") from None
        alloc = claim.status.allocation
        if alloc is None:
            raise _ClaimError(f"ResourceClaim {ref} is not allocated")
        mine = [r for r in alloc.devices.results if r.driver == self.driver.name]
        if not mine:
            drivers = sorted({r.driver for r in alloc.devices.results}) or ["none"]
            raise _ClaimError(f"ResourceClaim {ref} has no device allocated by driver {self.driver.name} "
                              f"(allocated by: {', '.join(drivers)})")
        configs = [c for c in alloc.devices.config if c.source == "FromClass"] + \
                  [c for c in alloc.devices.config if c.source != "FromClass"]
        devices = []
        for r in mine:
            published = self._inventory.devices.get((r.pool, r.device))
            if published is None:
                raise _ClaimError(f"ResourceClaim {ref}: device {r.pool}/{r.device} is not published by driver "
                                  f"{self.driver.name} on node {self.node_name}")
            parsed: Any = None
            for c in configs:
                if c.opaque is None or c.opaque.driver != self.driver.name:
                    continue
                if c.requests and r.request not in c.requests and _base_request(r.request) not in c.requests:
                    continue
                try:
                    value = self.driver.validate_config(c.opaque.parameters)
                except ConfigError as exc:
                    raise _ClaimError(f"ResourceClaim {ref}: invalid configuration for driver {self.driver.name} "
                                      f"(from {'class' if c.source == 'FromClass' else 'claim'}): {exc}") from None
                if not c.requests and not self.driver.config_applies(value, published):
                    continue  # meant for other devices (NVIDIA's GpuConfig on a MIG device): the one before applies
                parsed = value
            devices.append(AllocatedDevice(
                request=r.request, pool=r.pool, device=r.device, share_id=r.share_id or "",
                admin_access=bool(r.admin_access),
                consumed_capacity={k: str(v) for k, v in r.consumed_capacity.items()},
                published=published, config=parsed,
            ))
        return devices

    def _check_available(self, ref: ClaimRef, devices: list[AllocatedDevice]) -> None:
        """Refuse a device another prepared claim holds, or more than its capacity and counters allow."""
        held: list[tuple[ClaimRef, AllocatedDevice]] = [
            (p.ref, d) for p in self._prepared.values() for d in p.devices if not d.admin_access
        ]
        mine = [d for d in devices if not d.admin_access]
        for dev in mine:
            shared = bool(dev.published.get("allowMultipleAllocations"))
            for other_ref, other in held:
                if (other.pool, other.device) != (dev.pool, dev.device):
                    continue
                if not shared or other.share_id == dev.share_id:
                    raise _ClaimError(f"ResourceClaim {ref}: device {dev.pool}/{dev.device} is already prepared "
                                      f"for ResourceClaim {other_ref} (uid {other_ref.uid})")
            if shared:
                self._check_capacity(ref, dev, [d for _, d in held] + mine)
        self._check_counters(ref, [d for _, d in held] + mine)

    def _check_capacity(self, ref: ClaimRef, dev: AllocatedDevice, users: list[AllocatedDevice]) -> None:
        capacity = dev.published.get("capacity") or {}
        for name, cap in capacity.items():
            try:
                total = _qty(cap["value"])
                used = sum((_qty(d.consumed_capacity[name]) for d in users
                            if (d.pool, d.device) == (dev.pool, dev.device) and name in d.consumed_capacity),
                           Fraction(0))
            except (QuantityError, KeyError, TypeError) as exc:
                raise _ClaimError(f"ResourceClaim {ref}: bad capacity {name} of {dev.pool}/{dev.device}: "
                                  f"{exc}") from None
            if used > total:
                raise _ClaimError(f"ResourceClaim {ref}: device {dev.pool}/{dev.device} would have {name} "
                                  f"{_fmt(used)} consumed by prepared claims, more than its {cap['value']}")

    def _check_counters(self, ref: ClaimRef, users: list[AllocatedDevice]) -> None:
        used: dict[tuple[str, str], dict[str, Fraction]] = {}
        for d in users:
            for cc in d.published.get("consumesCounters") or []:
                key = (d.pool, cc["counterSet"])
                bucket = used.setdefault(key, {})
                for cname, c in (cc.get("counters") or {}).items():
                    bucket[cname] = bucket.get(cname, Fraction(0)) + _qty(c["value"])
        for (pool, cset), counters in sorted(used.items()):
            have = self._inventory.counters.get((pool, cset))
            if have is None:
                raise _ClaimError(f"ResourceClaim {ref}: counter set {pool}/{cset} is not published")
            for cname, amount in sorted(counters.items()):
                if amount > have.get(cname, Fraction(0)):
                    raise _ClaimError(f"ResourceClaim {ref}: prepared devices would consume {_fmt(amount)} of "
                                      f"counter {cname} in counter set {pool}/{cset}, which has "
                                      f"{_fmt(have.get(cname, Fraction(0)))}")

    # ---- checkpoint ------------------------------------------------------------------------
    @property
    def checkpoint_path(self) -> Path | None:
        return self.state_dir / "checkpoint.json" if self.state_dir is not None else None

    def _save_checkpoint(self) -> None:
        path = self.checkpoint_path
        if path is None:
            return
        data = {
            "version": CHECKPOINT_VERSION,
            "driver": self.driver.name,
            "node": self.node_name,
            "claims": {
                # Parsed configs are the driver's own types: not kept (unprepare gets config=None).
                uid: {"ref": asdict(p.ref), "devices": [{**asdict(d), "config": None} for d in p.devices],
                      "result": {"devices": [asdict(d) for d in p.result.devices]}}
                for uid, p in sorted(self._prepared.items())
            },
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)

    def _load_checkpoint(self) -> None:
        path = self.checkpoint_path
        if path is None or not path.exists():
            return
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != CHECKPOINT_VERSION or data.get("driver") != self.driver.name:
            raise RuntimeError(f"{path}: not a version {CHECKPOINT_VERSION} checkpoint of driver {self.driver.name}")
        for uid, entry in (data.get("claims") or {}).items():
            ref = ClaimRef(**entry["ref"])
            devices = [AllocatedDevice(**d) for d in entry["devices"]]
            result = PrepareResult(devices=tuple(
                PreparedDevice(tuple(d["request_names"]), d["pool_name"], d["device_name"],
                               tuple(d["cdi_device_ids"]), d.get("share_id", ""))
                for d in entry["result"]["devices"]
            ))
            self._prepared[uid] = _Prepared(ref, devices, result)


class _ClaimError(Exception):
    """A per-claim failure: becomes that claim's ``error``."""


def _fmt(v: Fraction) -> str:
    """A readable quantity for messages (81Gi rather than 86973087744)."""
    return str(Quantity.from_int(v.numerator, Format.BINARY_SI)) if v.denominator == 1 else str(float(v))
