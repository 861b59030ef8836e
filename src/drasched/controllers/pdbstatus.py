"""A PodDisruptionBudget's status, as kube-controller-manager's disruption controller writes it.

A port of the decisions of upstream ``pkg/controller/disruption/disruption.go`` (``trySync``,
``getExpectedPodCount``, ``getExpectedScale``, ``buildDisruptedPodMap``, ``countHealthyPods``,
``updatePdbStatus``, ``failSafe``) and of ``component-helpers/apps/poddisruptionbudget``: pure,
the pods and the controllers' scales in, the status and the Events out
(:mod:`drasched.controllers.disruption` reads and writes).

* The budget's pods are every pod of its namespace its selector matches, in any phase (a null
  selector matches none, an empty one all).
* ``expectedPods``: for an integer ``minAvailable`` the number of those pods; for ``maxUnavailable``
  or a percentage ``minAvailable`` the sum of the scales of the pods' controllers (a Deployment's
  ``replicas`` for the pods of its ReplicaSets, a ReplicaSet's or StatefulSet's own; see the
  controller's finders). A pod without a controller is *unmanaged*: left out, with a Warning
  ``UnmanagedPods`` Event; a controller without a scale fails the sync: ``disruptionsAllowed`` 0
  and condition ``DisruptionAllowed=False``, reason ``SyncFailed`` with the error.
* ``desiredHealthy``: ``minAvailable`` (a percentage of expected, rounded up), or expected minus
  ``maxUnavailable`` (rounded up), at least 0.
* ``currentHealthy``: pods that are Ready, not being deleted, and not in ``disruptedPods`` (an
  eviction the API server granted less than 2 minutes ago; older entries are dropped with a
  Warning ``NotDeleted`` Event on the pod). ``unhealthyPodEvictionPolicy`` matters only to eviction.
* ``disruptionsAllowed``: healthy minus desired, 0 when negative or when nothing is expected;
  condition ``DisruptionAllowed`` ``True``/``SufficientPods`` or ``False``/``InsufficientPods``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from drasched.api.meta import format_time, parse_time

Obj = dict[str, Any]

DELETION_TIMEOUT = timedelta(minutes=2)
"""Upstream ``DeletionTimeout``: how long an entry of ``disruptedPods`` waits for the pod's deletion."""

CONDITION = "DisruptionAllowed"
SUFFICIENT, INSUFFICIENT, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"


class ScaleError(Exception):
    """The expected pod count could not be computed (upstream's error, in its words)."""


Scale = tuple[str, int]
"""A controller's uid and its scale."""

ScaleFinder = Callable[[Obj, str], Scale | None]
"""Upstream's finders: the scale behind a pod's controller ownerReference in a namespace; None
when no controller by that reference exists; raises :class:`ScaleError` when its kind has no scale."""


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    message: str
    pod: Obj | None = None
    """The pod it is about; None: the budget."""


@dataclass
class Sync:
    """What one sync of a budget decided."""

    status: Obj
    events: list[Event] = field(default_factory=list)
    recheck: datetime | None = None
    """When an entry of ``disruptedPods`` times out (upstream ``enqueuePdbForRecheck``)."""


def controller_ref(obj: Obj) -> Obj | None:
    """``metav1.GetControllerOf``."""
    return next((r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if r.get("controller")), None)


def scaled_value(value: Any, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent`` rounding up: an integer, or a percentage of ``total``."""
    if isinstance(value, str):
        if not value.endswith("%"):
            raise ScaleError("invalid value for IntOrString: invalid type: string is not a percentage")
        try:
            percent = int(value[:-1])
        except ValueError as exc:
            raise ScaleError(f"invalid value {value!r}: {exc}") from exc
        return math.ceil(percent * total / 100)
    return int(value)


def expected_scale(pods: Iterable[Obj], find: ScaleFinder) -> tuple[int, list[str]]:
    """Upstream ``getExpectedScale``: the sum of the scales of the pods' controllers (each once),
    and the pods that have no controller."""
    scales: dict[str, int] = {}
    seen: set[str] = set()
    unmanaged: list[str] = []
    for pod in pods:
        md = pod.get("metadata") or {}
        ref = controller_ref(pod)
        if ref is None:
            unmanaged.append(str(md.get("name", "")))
            continue
        if str(ref.get("uid")) in seen:
            continue
        found = find(ref, str(md.get("namespace") or "default"))
        if found is None:
            raise ScaleError(f'found no controllers for pod "{md.get("name", "")}"')
        seen.add(str(ref.get("uid")))
        scales[found[0]] = found[1]
    return sum(scales.values()), unmanaged


def expected_pod_count(pdb: Obj, pods: list[Obj], find: ScaleFinder) -> tuple[int, int, list[str]]:
    """Upstream ``getExpectedPodCount``: (expectedPods, desiredHealthy, unmanaged pods)."""
    spec = pdb.get("spec") or {}
    if spec.get("maxUnavailable") is not None:
        expected, unmanaged = expected_scale(pods, find)
        return expected, max(0, expected - scaled_value(spec["maxUnavailable"], expected)), unmanaged
    min_available = spec.get("minAvailable")
    if min_available is None:
        return 0, 0, []
    if not isinstance(min_available, str):
        return len(pods), int(min_available), []
    expected, unmanaged = expected_scale(pods, find)
    return expected, scaled_value(min_available, expected), unmanaged


def disrupted_pod_map(pdb: Obj, pods: list[Obj], now: datetime) -> tuple[dict[str, str], datetime | None, list[Obj]]:
    """Upstream ``buildDisruptedPodMap``: the entries of ``disruptedPods`` still waiting for their
    pod's deletion, when the next one times out, and the pods whose entry timed out."""
    recorded = (pdb.get("status") or {}).get("disruptedPods") or {}
    kept: dict[str, str] = {}
    recheck: datetime | None = None
    expired: list[Obj] = []
    for pod in pods:
        md = pod.get("metadata") or {}
        when = recorded.get(md.get("name"))
        if md.get("deletionTimestamp") or when is None:
            continue
        deadline = parse_time(str(when)) + DELETION_TIMEOUT
        if deadline < now:
            expired.append(pod)
            continue
        recheck = deadline if recheck is None or deadline < recheck else recheck
        kept[str(md.get("name"))] = str(when)
    return kept, recheck, expired


def is_pod_ready(pod: Obj) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True (the phase is not looked at)."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def count_healthy(pods: list[Obj], disrupted: dict[str, str], now: datetime) -> int:
    """Upstream ``countHealthyPods``: Ready pods not being deleted nor about to be."""
    healthy = 0
    for pod in pods:
        md = pod.get("metadata") or {}
        if md.get("deletionTimestamp"):
            continue
        when = disrupted.get(str(md.get("name")))
        if when is not None and parse_time(when) + DELETION_TIMEOUT > now:
            continue
        healthy += is_pod_ready(pod)
    return healthy


def set_condition(conditions: list[Obj], status: str, reason: str, message: str, observed: int, now: str) -> None:
    """``meta.SetStatusCondition`` of the ``DisruptionAllowed`` condition (a ``metav1.Condition``):
    ``lastTransitionTime`` moves only when the status changes."""
    for cond in conditions:
        if cond.get("type") == CONDITION:
            if cond.get("status") != status:
                cond["status"] = status
                cond["lastTransitionTime"] = now
            cond.update(reason=reason, message=message)
            if observed:
                cond["observedGeneration"] = observed
            else:
                cond.pop("observedGeneration", None)
            return
    added: Obj = {"type": CONDITION, "status": status}
    if observed:
        added["observedGeneration"] = observed
    added.update(lastTransitionTime=now, reason=reason, message=message)
    conditions.append(added)


def _condition(status: Obj) -> Obj | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION), None)


def sync(pdb: Obj, pods: list[Obj], find: ScaleFinder, now: datetime) -> Sync:
    """Upstream ``trySync`` (``failSafe`` on an error): the status ``pdb`` should have now."""
    old: Obj = pdb.get("status") or {}
    generation = int((pdb.get("metadata") or {}).get("generation") or 0)
    stamp = format_time(now)
    events: list[Event] = []
    if not pods:
        events.append(Event("Normal", "NoPods", "No matching pods found"))
    try:
        expected, desired, unmanaged = expected_pod_count(pdb, pods, find)
    except ScaleError as exc:
        events.append(Event("Warning", "CalculateExpectedPodCountFailed",
                            f"Failed to calculate the number of expected pods: {exc}"))
        return Sync(fail_safe(old, str(exc), stamp), events)
    if unmanaged:
        events.append(Event("Warning", "UnmanagedPods", (
            "Pods selected by this PodDisruptionBudget (selector: "
            f"{go_label_selector((pdb.get('spec') or {}).get('selector'))}) were found to be unmanaged. As a "
            "result, the status of the PDB cannot be calculated correctly, which may result in undefined "
            'behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an '
            "integer value.")))
    disrupted, recheck, expired = disrupted_pod_map(pdb, pods, now)
    namespace = str((pdb.get("metadata") or {}).get("namespace") or "default")
    for pod in expired:  # upstream names the budget's namespace twice
        events.append(Event("Warning", "NotDeleted",
                            f"Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't", pod))
    healthy = count_healthy(pods, disrupted, now)
    allowed = healthy - desired if expected > 0 and healthy > desired else 0
    status: Obj = {}
    if generation:
        status["observedGeneration"] = generation
    if disrupted:
        status["disruptedPods"] = disrupted
    status.update(disruptionsAllowed=allowed, currentHealthy=healthy, desiredHealthy=desired, expectedPods=expected)
    conditions = [dict(c) for c in old.get("conditions") or []]
    if allowed > 0:
        set_condition(conditions, "True", SUFFICIENT, "", generation, stamp)
    else:
        set_condition(conditions, "False", INSUFFICIENT, "", generation, stamp)
    status["conditions"] = conditions
    return Sync(status if _changed(old, status, generation) else old, events, recheck)


def _changed(old: Obj, new: Obj, generation: int) -> bool:
    """Upstream ``updatePdbStatus``'s test: the numbers, ``disruptedPods``, ``observedGeneration``
    and ``ConditionsAreUpToDate``."""
    keys = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
    if any(int(old.get(k) or 0) != new[k] for k in keys):
        return True
    if (old.get("disruptedPods") or {}) != (new.get("disruptedPods") or {}):
        return True
    if int(old.get("observedGeneration") or 0) != generation:
        return True
    cond = _condition(old)
    if cond is None:
        return True
    want = ("True", SUFFICIENT) if new["disruptionsAllowed"] > 0 else ("False", INSUFFICIENT)
    return (cond.get("status"), cond.get("reason")) != want


def fail_safe(old: Obj, message: str, stamp: str) -> Obj:
    """Upstream ``failSafe``: the status as it was, with no disruption allowed and the condition
    ``DisruptionAllowed=False``, reason ``SyncFailed``, saying why."""
    status = dict(old)
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        status.setdefault(key, 0)  # required fields: the API server writes them as 0
    status["disruptionsAllowed"] = 0
    conditions = [dict(c) for c in old.get("conditions") or []]
    set_condition(conditions, "False", SYNC_FAILED, message, int(old.get("observedGeneration") or 0), stamp)
    status["conditions"] = conditions
    return status


def go_label_selector(selector: Obj | None) -> str:
    """A ``*metav1.LabelSelector`` as Go's ``%v`` prints it (its generated ``String()``)."""
    if selector is None:
        return "nil"
    labels = selector.get("matchLabels") or {}
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(str(v) for v in e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or [])
    pairs = "".join(f"{k}: {labels[k]}," for k in sorted(labels))
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")
