"""Adoption and release of dependents, as upstream's ``ControllerRefManager`` (``ClaimPods``).

kubernetes/kubernetes ``pkg/controller/controller_ref_manager.go`` ``ClaimObject``: an object
controlled by the owner stays its own while it matches the selector (and the filter), and is
released (the owner's ownerReference removed) once it no longer does; an orphan (no controller
ownerReference) in the owner's namespace that matches and is not being deleted is adopted
(a controller ownerReference with ``blockOwnerDeletion`` added, under the object's uid as
precondition); an object another controller owns is left alone. Nothing is adopted or released
while the owner is being deleted. No Events, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.api.kinds import ResourceType
from drasched.api.meta import controller_uid, owner_reference
from drasched.api.selectors import match_label_selector_object
from drasched.controllers.workloads.common import Obj, WorkloadBase, is_deleting, md, sort_key, spec_of


def claim(base: WorkloadBase, owner: Obj, candidates: Iterable[Obj], owned: list[Obj],
          rt: ResourceType = kinds.POD, filter_: Callable[[Obj], bool] | None = None) -> tuple[list[Obj], bool]:
    """``owned`` (what ``owner`` controls) less what it releases, plus the orphans among
    ``candidates`` it adopts, in name order; and whether it wrote anything."""
    selector = spec_of(owner).get("selector") or {}
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return owned, False  # an empty selector matches nothing here (upstream refuses it)

    def matches(obj: Obj) -> bool:
        return match_label_selector_object(selector, md(obj).get("labels") or {}) and (
            filter_ is None or filter_(obj))

    if is_deleting(owner):
        return owned, False
    uid, namespace = md(owner).get("uid"), md(owner).get("namespace") or "default"
    kept: list[Obj] = []
    wrote = False
    for obj in owned:
        if matches(obj):
            kept.append(obj)
        else:
            wrote |= _patch_refs(base, rt, obj, [r for r in md(obj).get("ownerReferences") or []
                                                 if r.get("uid") != uid]) is not None
    for obj in candidates:
        if (controller_uid(obj) or is_deleting(obj) or (md(obj).get("namespace") or "default") != namespace
                or not matches(obj)):
            continue
        adopted = _patch_refs(base, rt, obj, [*(md(obj).get("ownerReferences") or []), owner_reference(owner)])
        if adopted is not None:
            kept.append(adopted)
            wrote = True
    return sorted(kept, key=sort_key), wrote


def _patch_refs(base: WorkloadBase, rt: ResourceType, obj: Obj, refs: list[Obj]) -> Obj | None:
    """Upstream ``AdoptPod``/``ReleasePod``: patch ``metadata.ownerReferences`` (upstream: under the uid;
    here under the resourceVersion, which also stops a write over a change not seen yet)."""
    try:
        updated = base.ctx.store.patch(rt, md(obj).get("name", ""), md(obj).get("namespace"), {
            "metadata": {"ownerReferences": refs or None, "resourceVersion": md(obj).get("resourceVersion")}})
    except ApiError:
        return None  # gone or changed: the next pass sees it again
    base._put(updated)
    return updated
