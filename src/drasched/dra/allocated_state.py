"""Which devices are already taken, built from allocated claims.

Mirrors upstream's ``AllocatedState`` (``structured/internal/allocatedstate.go``) and the
scheduler's ``foreachAllocatedDevice``: results with ``adminAccess: true`` do not take a
device; results with a ``shareID`` are shares of a device that allows multiple allocations
and add to its consumed capacity instead of taking it. ``add``/``remove`` let a scheduler
commit tentatively within a cycle and roll back; per-pool versions tell the allocator
which cached counter totals are stale.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from drasched.dra.pools import DeviceID, PoolID, qualify, qvalue

Obj = dict[str, Any]

__all__ = ["AllocatedState"]


class AllocatedState:
    """Devices in use, device shares and consumed capacity, keyed by ``(driver, pool, device)``."""

    def __init__(self) -> None:
        self._exclusive: Counter[DeviceID] = Counter()
        self._shares: dict[DeviceID, Counter[str]] = defaultdict(Counter)
        self._capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self._pool_version: Counter[PoolID] = Counter()
        self._pool_devices: dict[PoolID, Counter[str]] = defaultdict(Counter)
        self._borrowed: set[PoolID] = set()
        """Pools whose device counter is still the one :meth:`fork` shared (copied on first write)."""
        self.version = 0

    @classmethod
    def from_claims(cls, claims: Iterable[Obj]) -> AllocatedState:
        """State from every claim (wire dicts); unallocated claims are skipped."""
        state = cls()
        for claim in claims:
            alloc = (claim.get("status") or {}).get("allocation")
            if alloc:
                state.add(alloc)
        return state

    def fork(self) -> AllocatedState:
        """A copy to change freely (one cycle's tentative allocations): devices and versions are
        copied at once, each pool's device names on its first change, so forking a large
        cluster's state costs little more than copying its taken devices."""
        out = AllocatedState()
        out._exclusive = self._exclusive.copy()
        out._shares = defaultdict(Counter, {d: c.copy() for d, c in self._shares.items()})
        out._capacity = {d: dict(c) for d, c in self._capacity.items()}
        out._pool_version = self._pool_version.copy()
        out._pool_devices = defaultdict(Counter, self._pool_devices)
        out._borrowed = set(self._pool_devices)
        out.version = self.version
        return out

    # ---------------------------------------------------------------- queries

    def in_use(self, device: DeviceID) -> bool:
        """Taken exclusively by some allocated claim."""
        return self._exclusive.get(device, 0) > 0

    def has_shares(self, device: DeviceID) -> bool:
        """Some claim holds a share of this (multi-allocation) device."""
        shares = self._shares.get(device)
        return shares is not None and sum(shares.values()) > 0

    def consumed_capacity(self, device: DeviceID) -> dict[str, Fraction]:
        """Capacity consumed by shares, by fully qualified capacity name."""
        return self._capacity.get(device) or {}

    def pool_version(self, pool: PoolID) -> int:
        return self._pool_version.get(pool, 0)

    def devices_in_pool(self, pool: PoolID) -> list[str]:
        """Names of the pool's devices that are taken or shared (they consume shared counters)."""
        names = self._pool_devices.get(pool)
        return [n for n, k in names.items() if k > 0] if names else []

    def devices(self) -> set[DeviceID]:
        """Every device taken exclusively (for tests and reports)."""
        return {d for d, n in self._exclusive.items() if n > 0}

    # ---------------------------------------------------------------- changes

    def add(self, allocation: Obj) -> None:
        """Account for one claim's ``status.allocation`` (wire form)."""
        self._apply(allocation, +1)

    def remove(self, allocation: Obj) -> None:
        """Undo :meth:`add` for the same allocation."""
        self._apply(allocation, -1)

    def _apply(self, allocation: Obj, sign: int) -> None:
        results = ((allocation or {}).get("devices") or {}).get("results") or []
        for r in results:
            if r.get("adminAccess"):
                continue  # admin access does not take the device
            driver, pool, name = r.get("driver", ""), r.get("pool", ""), r.get("device", "")
            dev = (driver, pool, name)
            share = r.get("shareID")
            if share:
                shares = self._shares[dev]
                shares[share] += sign
                if shares[share] <= 0:
                    del shares[share]
                if not shares:
                    del self._shares[dev]
                consumed = r.get("consumedCapacity") or {}
                if consumed:
                    cur = self._capacity.setdefault(dev, {})
                    for cname, q in consumed.items():
                        fq = qualify(cname, driver)
                        cur[fq] = cur.get(fq, Fraction(0)) + sign * qvalue(q)
                    if all(v == 0 for v in cur.values()):
                        del self._capacity[dev]
            else:
                self._exclusive[dev] += sign
                if self._exclusive[dev] <= 0:
                    del self._exclusive[dev]
            self._pool_version[(driver, pool)] += 1
            if (driver, pool) in self._borrowed:
                self._borrowed.discard((driver, pool))
                self._pool_devices[(driver, pool)] = self._pool_devices[(driver, pool)].copy()
            in_pool = self._pool_devices[(driver, pool)]
            in_pool[name] += sign
            if in_pool[name] <= 0:
                del in_pool[name]
        self.version += 1
