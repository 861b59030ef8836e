"""Other schedulers' objects, read from a live API server, kept as drasched's own.

``drasched serve`` reads the upstream gang API (``scheduling.k8s.io`` PodGroup and Workload),
KAI-Scheduler's ``scheduling.run.ai`` Queue and PodGroup and scheduler-plugins'
``scheduling.x-k8s.io`` PodGroup (coscheduling) where the server serves them; ``simulate`` reads
the upstream gang API the same way from its memory store, which serves it (:data:`kinds.UPSTREAM_GANG`).
The scheduler cache keeps each one translated, once per object version, by the pure
functions of :mod:`drasched.api.foreign`, under drasched's own PodGroup and Queue kinds: the
snapshot builder and its change log see one PodGroup kind and one Queue kind, whatever
wrote them, and nothing is written back to the server.

What a translation keeps of its source, beyond :mod:`drasched.api.foreign`'s output: the
``uid`` (a group claim is owned by, and reserved for, the upstream PodGroup), the upstream
PodGroup's ``status`` (``resourceClaimStatuses`` names its claims from templates), and a
``resourceVersion`` that changes with the source or the Workload it reads.

Where two objects claim one name, drasched's own object wins, then the upstream PodGroup,
then KAI's, then scheduler-plugins'; the one that lost is reported once per version of the pair, naming both objects
(docs/design.md, "Other schedulers' objects"). No I/O here: the cache feeds the objects in
and the scheduler controller turns :meth:`ForeignIntake.take_problems` into Events.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from drasched.api import foreign, kinds
from drasched.api.errors import ApiError
from drasched.api.foreign_shapes import decode_foreign
from drasched.api.kinds import ResourceType

Obj = dict[str, Any]

TARGET_OF: dict[ResourceType, ResourceType] = {
    kinds.UPSTREAM_POD_GROUP: kinds.POD_GROUP,
    kinds.UPSTREAM_POD_GROUP_V1ALPHA2: kinds.POD_GROUP,
    kinds.KAI_POD_GROUP: kinds.POD_GROUP,
    kinds.COSCHEDULING_POD_GROUP: kinds.POD_GROUP,
    kinds.KAI_QUEUE: kinds.QUEUE,
}
"""Each translated kind and the drasched kind it is kept as, in precedence order."""
WORKLOAD_OF: dict[ResourceType, ResourceType] = {
    kinds.UPSTREAM_POD_GROUP: kinds.UPSTREAM_WORKLOAD,
    kinds.UPSTREAM_POD_GROUP_V1ALPHA2: kinds.UPSTREAM_WORKLOAD_V1ALPHA2,
}
"""An upstream PodGroup reads the Workload template of its own version."""
TARGETS = (kinds.POD_GROUP, kinds.QUEUE)
CACHE_ONLY = "drasched.io/cache-only"
"""Annotation (``"true"``) on a translation kept only in the scheduler's cache: the server (in
``simulate``, the memory store) holds the object ``drasched.io/translated-from`` names, not this
one. (``simulate`` creates its translations of KAI's and scheduler-plugins' objects as drasched
objects: they carry ``translated-from`` alone and are written to as any other.)"""


@dataclass(frozen=True)
class Problem:
    """A message about one object the scheduler should see as an Event on it."""

    obj: Obj
    reason: str
    message: str


@dataclass
class _Translated:
    source: Obj
    workload: Obj | None
    obj: Obj | None
    """None: the object cannot be read (its problem says why)."""


def translate_one(rt: ResourceType, obj: Obj, workloads: Mapping[str, Obj]) -> tuple[Obj | None, list[str]]:
    """``obj`` of foreign kind ``rt`` as drasched's PodGroup or Queue, and the warnings of
    :mod:`drasched.api.foreign`; ``workloads``: the Workloads of ``obj``'s version by
    ``namespace/name``. None (and why) when the object does not decode."""
    src = copy.deepcopy(obj)  # decoding normalises in place; cached objects are never mutated
    src.setdefault("apiVersion", rt.api_version)
    src.setdefault("kind", rt.kind)
    try:
        decode_foreign(src)
    except ApiError as exc:
        return None, [f"{_what(src)}: cannot be read: {exc.message}"]
    warnings: list[str] = []
    if rt in WORKLOAD_OF:
        out = foreign.upstream_pod_group(src, dict(workloads), warnings)
    elif rt == kinds.KAI_QUEUE:
        out = foreign.kai_queue(src, warnings)
    elif rt == kinds.COSCHEDULING_POD_GROUP:
        out = foreign.coscheduling_pod_group(src, warnings)
    else:
        out = foreign.kai_pod_group(src, warnings)
    md = out["metadata"]
    md["annotations"][CACHE_ONLY] = "true"
    src_md = obj.get("metadata") or {}
    if src_md.get("uid"):
        md["uid"] = src_md["uid"]
    workload = workloads.get(_workload_key(rt, obj) or "")
    rv = str(src_md.get("resourceVersion") or "")
    wrv = ((workload or {}).get("metadata") or {}).get("resourceVersion")
    md["resourceVersion"] = f"{rv}+{wrv}" if wrv else rv
    if rt in WORKLOAD_OF and obj.get("status"):
        out["status"] = copy.deepcopy(obj["status"])
    return out, warnings


def source_of(obj: Obj) -> Obj:
    """The object a translation was made from, as far as an Event names it (apiVersion, kind,
    name, namespace, uid); ``obj`` itself when it is not a translation."""
    md = obj.get("metadata") or {}
    written = (md.get("annotations") or {}).get(foreign.TRANSLATED_FROM)
    if not is_translated(obj) or not written or " " not in written:
        return obj
    api_version, kind = written.split(" ", 1)
    ref_md = {k: md[k] for k in ("name", "namespace", "uid") if md.get(k)}
    return {"apiVersion": api_version, "kind": kind, "metadata": ref_md}


def is_translated(obj: Obj | None) -> bool:
    """Whether ``obj`` is a translation kept only in serve's cache (never written to)."""
    return (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(CACHE_ONLY) == "true"


def claim_consumer(obj: Obj | None) -> tuple[str, str]:
    """(apiGroup, resource) of a group claim's ``reservedFor`` entry for this PodGroup: the
    upstream PodGroup itself for a translation of one (as kube-scheduler reserves it,
    KEP-5729), else drasched's PodGroup."""
    src = source_of(obj or {})
    if src is not obj and str(src.get("apiVersion", "")).startswith(foreign.UPSTREAM_GROUP + "/"):
        return foreign.UPSTREAM_GROUP, "podgroups"
    return kinds.DRASCHED, kinds.POD_GROUP.plural


# ---- the upstream PodGroup's status (k8s.io/api scheduling/v1beta1 PodGroupStatus) ----------

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
"""1.37's (v1beta1) condition type: True once the group's scheduling requirement was met;
terminal ("will never revert to False")."""
SCHEDULED_V1ALPHA2 = "PodGroupScheduled"
"""1.36's (v1alpha2) condition type, written by kube-scheduler at each attempt (not terminal)."""
CONDITION_OF: dict[ResourceType, tuple[str, bool]] = {
    kinds.UPSTREAM_POD_GROUP: (INITIALLY_SCHEDULED, True),
    kinds.UPSTREAM_POD_GROUP_V1ALPHA2: (SCHEDULED_V1ALPHA2, False),
}
"""The upstream PodGroup's condition kube-scheduler writes, per version, and whether True is terminal."""


def initially_scheduled_patch(obj: Obj, scheduled: bool, message: str, now: str) -> tuple[ResourceType, Obj] | None:
    """The status patch that records the scheduling condition on the upstream PodGroup ``obj``
    was translated from, as kube-scheduler writes it (:data:`CONDITION_OF`; reason ``Scheduled``
    or ``Unschedulable``); None when ``obj`` is not an upstream translation, or when nothing
    would change (the same status and message, or a terminal True already)."""
    src = source_of(obj)
    rt = next((r for r in CONDITION_OF if r.api_version == src.get("apiVersion") and r.kind == src.get("kind")), None)
    if rt is None or src is obj:
        return None
    kind, terminal = CONDITION_OF[rt]
    conditions = list((obj.get("status") or {}).get("conditions") or [])
    old = next((c for c in conditions if c.get("type") == kind), None)
    status = "True" if scheduled else "False"
    if old is not None and ((terminal and old.get("status") == "True")
                            or (old.get("status"), old.get("message")) == (status, message)):
        return None
    since = old.get("lastTransitionTime") if old is not None and old.get("status") == status else now
    cond = {"type": kind, "status": status, "reason": "Scheduled" if scheduled else "Unschedulable",
            "message": message, "lastTransitionTime": since,
            "observedGeneration": int((obj.get("metadata") or {}).get("generation") or 0)}
    if not cond["observedGeneration"]:
        del cond["observedGeneration"]
    others = [c for c in conditions if c.get("type") != kind]
    return rt, {"status": {"conditions": [*others, cond]}}


# ---- the merged view -------------------------------------------------------------------------


class ForeignIntake:
    """drasched's PodGroups and Queues plus the translations of the foreign kinds ``sources``
    (those the server serves), merged by name; fed the changed keys of any of them."""

    def __init__(self, sources: Iterable[ResourceType]) -> None:
        self.sources = tuple(sources)
        self.translated = tuple(rt for rt in TARGET_OF if rt in self.sources)
        self._memo: dict[tuple[ResourceType, str], _Translated] = {}
        self._readers: dict[tuple[ResourceType, str], set[str]] = {}
        """(Workload kind, workload key) -> keys of the PodGroups that read it."""
        self._reported: dict[tuple[ResourceType, str], tuple[str, ...]] = {}
        self._problems: list[Problem] = []

    def feeds(self, rt: ResourceType) -> bool:
        """Whether a change of ``rt`` may change the merged view."""
        return rt in TARGETS or rt in self.sources

    def update(self, rt: ResourceType, keys: Iterable[str],
               objects: Callable[[ResourceType], Mapping[str, Obj]],
               view: Callable[[ResourceType], Mapping[str, Obj]]) -> dict[ResourceType, dict[str, Obj | None]]:
        """The merged entries that change because ``keys`` of ``rt`` changed: per target kind,
        key -> the object now (None: gone). ``objects``: the raw objects of a kind as the cache
        holds them (drasched's own for a target kind); ``view``: the merged view so far."""
        touched: dict[ResourceType, set[str]] = {}
        if rt in TARGETS:
            touched[rt] = set(keys)
        elif rt in WORKLOAD_OF.values():
            for pg_rt, w_rt in WORKLOAD_OF.items():
                if w_rt == rt and pg_rt in self.sources:
                    readers = set().union(*(self._readers.get((rt, k), set()) for k in keys))
                    touched.setdefault(TARGET_OF[pg_rt], set()).update(readers)
        elif rt in TARGET_OF:
            touched.setdefault(TARGET_OF[rt], set()).update(keys)
        out: dict[ResourceType, dict[str, Obj | None]] = {}
        for target, tkeys in touched.items():
            current = view(target)
            for key in tkeys:
                merged = self._merge(target, key, objects)
                if merged is not current.get(key):
                    out.setdefault(target, {})[key] = merged
        return out

    def take_problems(self) -> list[Problem]:
        """The problems found since the last call, each once."""
        out, self._problems = self._problems, []
        return out

    def _translation(self, rt: ResourceType, key: str, objects: Callable[[ResourceType], Mapping[str, Obj]]) \
            -> Obj | None:
        src = objects(rt).get(key)
        if src is None:
            self._forget(rt, key)
            self._reported.pop((rt, key), None)  # deleted: a new object of this name is news again
            self._reported.pop((rt, f"{key}#conflict"), None)
            return None
        w_rt = WORKLOAD_OF.get(rt)
        wkey = _workload_key(rt, src) if w_rt is not None else None
        workload = objects(w_rt).get(wkey) if w_rt is not None and wkey else None
        memo = self._memo.get((rt, key))
        if memo is not None and memo.source is src and memo.workload is workload:
            return memo.obj
        self._forget(rt, key)
        if w_rt is not None and wkey:
            self._readers.setdefault((w_rt, wkey), set()).add(key)
        obj, warnings = translate_one(rt, src, {wkey: workload} if wkey and workload is not None else {})
        self._memo[(rt, key)] = _Translated(src, workload, obj)
        self._report(rt, key, src, [("Ignored", w) for w in warnings])
        return obj

    def _forget(self, rt: ResourceType, key: str) -> None:
        old = self._memo.pop((rt, key), None)
        w_rt = WORKLOAD_OF.get(rt)
        if old is not None and w_rt is not None:
            wkey = _workload_key(rt, old.source)
            readers = self._readers.get((w_rt, wkey or ""))
            if readers is not None:
                readers.discard(key)
                if not readers:
                    del self._readers[(w_rt, wkey or "")]

    def _merge(self, target: ResourceType, key: str, objects: Callable[[ResourceType], Mapping[str, Obj]]) \
            -> Obj | None:
        candidates: list[tuple[ResourceType, Obj]] = []
        native = objects(target).get(key)
        if native is not None:
            candidates.append((target, native))
        for rt in self.translated:
            if TARGET_OF[rt] == target:
                t = self._translation(rt, key, objects)
                if t is not None:
                    candidates.append((rt, t))
        if not candidates:
            return None
        winner_rt, winner = candidates[0]
        for rt, loser in candidates[1:]:
            if target == kinds.QUEUE and winner_rt == target and _spec(loser) == _spec(winner):
                self._report(rt, f"{key}#conflict", loser, [])
                continue  # the same queue written twice: nothing to tell
            field = "metadata.name" if not key.count("/") else "metadata.namespace/name"
            self._report(rt, f"{key}#conflict", loser, [(
                "NameConflict",
                f"{_what(source_of(loser))}: ignored: {_what(source_of(winner))} has the same {field} and wins "
                f"(drasched's own objects win, then the upstream PodGroup, then KAI's, then scheduler-plugins')")])
        return winner

    def _report(self, rt: ResourceType, slot: str, obj: Obj, items: list[tuple[str, str]]) -> None:
        """Record the messages about one object that are new since its last version: a repeat
        is not news (a status write, ours included, makes a new version saying the same)."""
        before = self._reported.get((rt, slot), ())
        self._reported[(rt, slot)] = tuple(m for _, m in items)
        src = source_of(obj)
        for reason, message in items:
            if message not in before:
                self._problems.append(Problem(src, reason, message))


def _workload_key(rt: ResourceType, pg: Obj) -> str | None:
    spec = pg.get("spec") or {}
    if rt == kinds.UPSTREAM_POD_GROUP_V1ALPHA2:
        name = ((spec.get("podGroupTemplateRef") or {}).get("workload") or {}).get("workloadName")
    elif rt == kinds.UPSTREAM_POD_GROUP:
        name = (spec.get("workloadRef") or {}).get("workloadName")
    else:
        return None
    ns = (pg.get("metadata") or {}).get("namespace") or "default"
    return f"{ns}/{name}" if name else None


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _what(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    name = f"{md['namespace']}/{md.get('name', '')}" if md.get("namespace") else str(md.get("name", ""))
    return f"{obj.get('apiVersion')} {obj.get('kind')} {name}"
