"""Read the objects scheduling depends on from a cluster, as manifests ``simulate`` accepts.

The server's bookkeeping (resourceVersion, managedFields, generation, selfLink) is dropped:
a restore gets its own. ``uid`` and ``creationTimestamp`` stay, because the scheduler orders
pods and gangs by age and owner references, ``reservedFor`` and BindRequests name uids.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from drasched.api import kinds
from drasched.api.errors import NotFound
from drasched.api.job_strategy import restorable_job
from drasched.api.kinds import ResourceType
from drasched.store.base import ListResult

Obj = dict[str, Any]

SERVER_MANAGED = ("resourceVersion", "managedFields", "generation", "selfLink")
SKIPPED_KINDS = (kinds.EVENT, kinds.LEASE)
"""Events are history, Leases are leader election and node heartbeats: neither schedules."""


class Lister(Protocol):
    def list(self, rt: ResourceType, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> ListResult: ...


def clean(obj: Obj) -> Obj:
    """``obj`` without the fields the server manages (a copy is not made: lists are fresh)."""
    md = obj.get("metadata") or {}
    for key in SERVER_MANAGED:
        md.pop(key, None)
    return restorable_job(obj)


FOREIGN_KINDS: tuple[tuple[ResourceType, ...], ...] = (
    (kinds.UPSTREAM_WORKLOAD, kinds.UPSTREAM_WORKLOAD_V1ALPHA2),
    (kinds.UPSTREAM_POD_GROUP, kinds.UPSTREAM_POD_GROUP_V1ALPHA2),
    (kinds.KAI_QUEUE,), (kinds.KAI_POD_GROUP,), (kinds.COSCHEDULING_POD_GROUP,),
)
"""Other schedulers' kinds ``serve`` reads translated (docs/design.md, "Other schedulers' objects"),
each in the versions tried, newest first: a cluster's gangs and queues may be written only in
them, and a snapshot without them would simulate pods that name a queue or group nobody has."""


def take_snapshot(store: Lister, kinds_to_read: Iterable[ResourceType] = kinds.ALL,
                  foreign: Iterable[tuple[ResourceType, ...]] = FOREIGN_KINDS) -> list[Obj]:
    """Every object of the kinds drasched reads that the server serves, in restore order.

    A kind the server does not serve (a CRD that is not installed) answers 404 and is skipped;
    of another scheduler's kind, the first version served is read (a server serving two
    versions of a kind holds each object once, in both).
    """
    objects: list[Obj] = []
    for rt in kinds_to_read:
        if rt not in SKIPPED_KINDS:
            objects.extend(_read(store, rt) or ())
    for versions in foreign:
        for rt in versions:
            items = _read(store, rt)
            if items is not None:
                objects.extend(items)
                break
    return objects


def _read(store: Lister, rt: ResourceType) -> list[Obj] | None:
    """The kind's objects sorted by namespace and name, cleaned; None: the server does not serve it."""
    try:
        items = store.list(rt).items
    except NotFound:
        return None
    items.sort(key=lambda o: ((o.get("metadata") or {}).get("namespace") or "",
                              (o.get("metadata") or {}).get("name") or ""))
    return [clean(o) for o in items]


def write_snapshot(objects: list[Obj], directory: Path) -> list[Path]:
    """One YAML file per kind, named so that a directory listing reads in restore order (another
    scheduler's kind beside drasched's of the same name, its API group in the file name)."""
    from drasched.api.manifest import dump_yaml

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for rt in (*kinds.ALL, *(v for versions in FOREIGN_KINDS for v in versions)):
        of_kind = [o for o in objects if o.get("kind") == rt.kind and o.get("apiVersion") == rt.api_version]
        if of_kind:
            name = f"{rt.plural}.{rt.group}.{rt.version}" if rt in kinds.FOREIGN else rt.plural
            path = directory / f"{kinds.order_index(rt):02d}-{name}.yaml"
            path.write_text(dump_yaml(of_kind), encoding="utf-8")
            written.append(path)
    return written
