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


def take_snapshot(store: Lister, kinds_to_read: Iterable[ResourceType] = kinds.ALL) -> list[Obj]:
    """Every object of the kinds drasched knows that the server serves, in restore order.

    A kind the server does not serve (a CRD that is not installed) answers 404 and is skipped.
    """
    objects: list[Obj] = []
    for rt in kinds_to_read:
        if rt in SKIPPED_KINDS:
            continue
        try:
            items = store.list(rt).items
        except NotFound:
            continue
        items.sort(key=lambda o: ((o.get("metadata") or {}).get("namespace") or "",
                                  (o.get("metadata") or {}).get("name") or ""))
        objects.extend(clean(o) for o in items)
    return objects


def write_snapshot(objects: list[Obj], directory: Path) -> list[Path]:
    """One YAML file per kind, named so that a directory listing reads in restore order."""
    from drasched.api.manifest import dump_yaml

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for rt in kinds.ALL:
        of_kind = [o for o in objects if o.get("kind") == rt.kind]
        if of_kind:
            path = directory / f"{kinds.order_index(rt):02d}-{rt.plural}.yaml"
            path.write_text(dump_yaml(of_kind), encoding="utf-8")
            written.append(path)
    return written
