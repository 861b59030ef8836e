"""Two of kube-apiserver's default admission plugins for pods, as the memory store runs them.

The server runs its mutating plugins in one fixed order (``AllOrderedPlugins``,
pkg/kubeapiserver/options/plugins.go): Priority (the memory store's ``_admit_priority``), then
DefaultTolerationSeconds, then RuntimeClass; then the object's validation; then the validating
plugins, RuntimeClass's among them. Both are in the default-enabled set
(``DefaultOffAdmissionPlugins``), so every pod a real cluster stores has been through them, and
the scheduler reads what they wrote: ``spec.overhead`` counts in the pod's requests, the node
selector and tolerations filter nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drasched.api.errors import ApiError, Forbidden
from drasched.quantity import Quantity, QuantityError
from drasched.store.wire import tree_copy

Obj = dict[str, Any]
RuntimeClassLookup = Callable[[str], Obj | None]
"""A RuntimeClass by name, or None (the store's own object: read, never changed)."""

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
DEFAULT_TOLERATION_SECONDS = 300
"""kube-apiserver's ``--default-not-ready-toleration-seconds`` and ``--default-unreachable-...``."""


def admit_pod(spec: Obj, pod_name: str, runtime_class: RuntimeClassLookup) -> None:
    """The mutating plugins after Priority, in the server's order, on a new pod's ``spec``."""
    default_toleration_seconds(spec)
    admit_runtime_class(spec, pod_name, runtime_class)


def default_toleration_seconds(spec: Obj) -> None:
    """DefaultTolerationSeconds (plugin/pkg/admission/defaulttolerationseconds ``Admit``, on create
    and update): a pod that tolerates no ``not-ready:NoExecute`` taint gets ``{key: not-ready,
    operator: Exists, effect: NoExecute, tolerationSeconds: 300}`` appended after its own
    tolerations, then the same for ``unreachable``. A toleration counts when its key is the taint's
    or empty and its effect NoExecute or empty, whatever its operator, value or seconds."""
    own = spec.get("tolerations")
    tolerations = [t for t in own if isinstance(t, dict)] if isinstance(own, list) else []
    added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for key in (NOT_READY, UNREACHABLE)
             if not any((t.get("key") or "") in (key, "") and (t.get("effect") or "") in ("NoExecute", "")
                        for t in tolerations)]
    if added:  # a new list: the old one may be shared with a stored object
        spec["tolerations"] = [*(own if isinstance(own, list) else []), *added]


def admit_runtime_class(spec: Obj, pod_name: str, runtime_class: RuntimeClassLookup) -> None:
    """RuntimeClass's mutating half (plugin/pkg/admission/runtimeclass ``Admit``, create only):
    the class the pod names must exist; its ``overhead.podFixed`` becomes ``spec.overhead``
    (``setOverhead``); its node selector joins the pod's and its tolerations are merged into the
    pod's (``setScheduling``)."""
    rc = _runtime_class(spec, pod_name, runtime_class)
    if rc is None:
        return
    _set_overhead(spec, pod_name, rc)
    _set_scheduling(spec, pod_name, rc)


def validate_runtime_class(spec: Obj, pod_name: str, runtime_class: RuntimeClassLookup) -> None:
    """RuntimeClass's validating half (``Validate``, ``validateOverhead``), after the pod's
    validation: a pod may carry ``spec.overhead`` (even ``{}``) only as its class defines it."""
    overhead = spec.get("overhead")
    if overhead is None:
        return
    rc = _runtime_class(spec, pod_name, runtime_class)
    defined = rc.get("overhead") if rc is not None else None
    if isinstance(defined, dict):
        if not _same_resources(defined.get("podFixed") or {}, overhead):
            raise _forbidden(pod_name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    else:
        raise _forbidden(pod_name, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")


def _runtime_class(spec: Obj, pod_name: str, runtime_class: RuntimeClassLookup) -> Obj | None:
    """``prepareObjects``: the class named by ``spec.runtimeClassName``, None when none is named.
    An empty name fails the plugin's live lookup in client-go (an internal error, 500)."""
    name = spec.get("runtimeClassName")
    if name is None:
        return None
    if not name:
        raise ApiError("resource name may not be empty", 500, "InternalError", "Pod", pod_name)
    rc = runtime_class(str(name))
    if rc is None:
        raise _forbidden(pod_name, f'pod rejected: RuntimeClass "{name}" not found')
    return rc


def _set_overhead(spec: Obj, pod_name: str, rc: Obj) -> None:
    """``setOverhead``: a class with ``overhead`` sets the pod's (none when ``podFixed`` is empty);
    an overhead the pod brings must equal it, quantity by quantity."""
    defined = rc.get("overhead")
    if not isinstance(defined, dict):
        return
    pod_fixed = defined.get("podFixed") or {}
    if spec.get("overhead") and not _same_resources(pod_fixed, spec["overhead"]):
        raise _forbidden(pod_name, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
    if pod_fixed:
        spec["overhead"] = dict(pod_fixed)
    else:
        spec.pop("overhead", None)


def _set_scheduling(spec: Obj, pod_name: str, rc: Obj) -> None:
    """``setScheduling``: the class's node selector is added to the pod's (a key both set to
    different values is refused, the first in key order: Go's map order is random); the pod's
    tolerations, then the class's, merged (:func:`merge_tolerations`)."""
    scheduling = rc.get("scheduling")
    if not isinstance(scheduling, dict):
        return
    wanted: Obj = scheduling.get("nodeSelector") or {}
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict):
        for key in sorted(wanted):
            if key in selector and selector[key] != wanted[key]:
                raise _forbidden(pod_name, f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {wanted[key]}; "
                                           f"pod.spec.nodeSelector[{key}] = {selector[key]}")
        if wanted:
            spec["nodeSelector"] = {**selector, **wanted}
    elif wanted:
        spec["nodeSelector"] = dict(wanted)
    own = spec.get("tolerations")
    merged = merge_tolerations([t for t in own if isinstance(t, dict)] if isinstance(own, list) else [],
                               tree_copy(scheduling.get("tolerations") or []))
    if merged:
        spec["tolerations"] = merged
    else:
        spec.pop("tolerations", None)


def merge_tolerations(first: list[Obj], second: list[Obj]) -> list[Obj]:
    """``DoTolerationsMerge`` (pkg/util/tolerations/merge): ``first`` then ``second`` in order, less
    each toleration another one covers (:func:`is_superset`); of two equal ones the first stays."""
    every = [*first, *second]
    merged: list[Obj] = []
    for i, t in enumerate(every):
        if any(is_superset(kept, t) for kept in merged):
            continue
        if any(not _equal(t, later) and is_superset(later, t) for later in every[i + 1:]):
            continue
        merged.append(t)
    return merged


def is_superset(ss: Obj, t: Obj) -> bool:
    """``IsSuperset``: whether ``ss`` tolerates every taint ``t`` does. Operators are compared as
    written: an empty operator means Equal for ``ss`` but not for ``t``, as upstream."""
    if _equal(ss, t):
        return True
    ss_key, ss_op, ss_effect = ss.get("key") or "", ss.get("operator") or "", ss.get("effect") or ""
    if (t.get("key") or "") != ss_key and (ss_key or ss_op != "Exists"):
        return False
    if (t.get("effect") or "") != ss_effect and ss_effect:
        return False
    if ss_effect == "NoExecute" and ss.get("tolerationSeconds") is not None:
        seconds = t.get("tolerationSeconds")
        if seconds is None or seconds > ss["tolerationSeconds"]:
            return False
    if ss_op in ("Equal", ""):
        return t.get("operator") == "Equal" and (t.get("value") or "") == (ss.get("value") or "")
    return ss_op == "Exists"


def _equal(a: Obj, b: Obj) -> bool:
    """``equality.Semantic.DeepEqual`` of two tolerations (absent and empty strings alike)."""
    return all((a.get(f) or "") == (b.get(f) or "") for f in ("key", "operator", "value", "effect")) \
        and a.get("tolerationSeconds") == b.get("tolerationSeconds")


def _same_resources(a: Obj, b: Any) -> bool:
    """``equality.Semantic.DeepEqual`` of two ResourceLists: the same names, equal quantities."""
    if not isinstance(b, dict) or set(a) != set(b):
        return False
    try:
        return all(Quantity.parse(a[k]) == Quantity.parse(b[k]) for k in a)
    except (QuantityError, TypeError, ValueError):
        return False


def _forbidden(pod_name: str, why: str) -> Forbidden:
    """``admission.NewForbidden``: the pod named as the request names it (a generateName prefix)."""
    return Forbidden(f'pods "{pod_name}" is forbidden: {why}', "Pod", pod_name)
