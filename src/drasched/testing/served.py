"""What the test kube-apiserver serves, by Kubernetes minor version, and manifests in that form.

Why: the suite runs against the version ``scripts/build-kube.sh`` builds (1.37) and must still
start the one before it (1.36) while a cache holds only that. Between them, kinds moved:

* DeviceTaintRule: ``resource.k8s.io/v1`` in 1.37 (GA, on by default); 1.36 serves it only as
  ``v1beta2`` (beta, gate ``DRADeviceTaintRules``). Same shape in every version.
* Workload and PodGroup: ``scheduling.k8s.io/v1beta1`` in 1.37; 1.36 serves ``v1alpha2``, which
  1.37 no longer serves. The shapes differ (:func:`gang_as`).

A ``--runtime-config`` naming a group version the binary does not know, or a ``--feature-gates``
naming a gate it does not know, makes kube-apiserver refuse to start, so those flags come from
here too. Pure functions: no I/O.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

RESOURCE = "resource.k8s.io"
SCHEDULING = "scheduling.k8s.io"
TAINT_RULE_VERSIONS = (f"{RESOURCE}/v1", f"{RESOURCE}/v1beta2", f"{RESOURCE}/v1alpha3")
"""Every version DeviceTaintRule was served in; all have v1's shape."""
GANG_KINDS = ("Workload", "PodGroup")
GANG_V1ALPHA2 = f"{SCHEDULING}/v1alpha2"
GANG_V1BETA1 = f"{SCHEDULING}/v1beta1"


@dataclass(frozen=True)
class ServedApis:
    """The API versions one Kubernetes minor's test server serves for the kinds that moved."""

    minor: int
    taint_rule: str
    """apiVersion DeviceTaintRule is served in."""
    gang: str
    """apiVersion Workload and PodGroup are served in."""
    runtime_config: tuple[str, ...]
    """``--runtime-config`` entries: every DRA version the conversion contract reads back, and
    the gang API (with ``GenericWorkload`` on, the server's own PodGroup and Workload
    informers never sync without it, and ``/readyz`` stays failing)."""
    gang_gates: tuple[str, ...]
    """Alpha gates of the gang API's fields, on top of the DRA gates every release takes: with
    them off the server drops ``schedulingConstraints`` (both releases) and, in 1.36,
    ``disruptionMode`` and ``priorityClassName`` on write. 1.37 removed GangScheduling and
    WorkloadAwarePreemption (its fields are always served), so they are 1.36's alone."""


def kube_minor(version: str) -> int:
    """``v1.37.2`` -> 37."""
    m = re.fullmatch(r"v?1\.(\d+)(\.\d+)?([-+].*)?", version)
    if not m:
        raise ValueError(f"not a Kubernetes version: {version!r} (expected v1.MINOR.PATCH)")
    return int(m.group(1))


def served_apis(version: str) -> ServedApis:
    """What a test server of ``version`` serves; 1.36 and 1.37 are supported."""
    minor = kube_minor(version)
    dra = (f"{RESOURCE}/v1=true", f"{RESOURCE}/v1beta2=true", f"{RESOURCE}/v1beta1=true")
    if minor >= 37:
        return ServedApis(minor, f"{RESOURCE}/v1", GANG_V1BETA1, (*dra, f"{GANG_V1BETA1}=true"),
                          ("TopologyAwareWorkloadScheduling",))
    if minor == 36:
        return ServedApis(minor, f"{RESOURCE}/v1beta2", GANG_V1ALPHA2, (*dra, f"{GANG_V1ALPHA2}=true"),
                          ("TopologyAwareWorkloadScheduling", "GangScheduling", "WorkloadAwarePreemption"))
    raise ValueError(f"Kubernetes {version} is not supported by the test setup (1.36 or 1.37)")


def is_gang(obj: Obj) -> bool:
    return obj.get("kind") in GANG_KINDS and obj.get("apiVersion") in (GANG_V1ALPHA2, GANG_V1BETA1)


def as_served(obj: Obj, served: ServedApis) -> Obj:
    """``obj`` written in the version ``served`` serves for its kind (a copy when it changes)."""
    if obj.get("kind") == "DeviceTaintRule" and obj.get("apiVersion") in TAINT_RULE_VERSIONS:
        return obj if obj["apiVersion"] == served.taint_rule else {**obj, "apiVersion": served.taint_rule}
    if is_gang(obj):
        return gang_as(obj, served.gang)
    return obj


# ---- the gang API: v1alpha2 (1.36) <-> v1beta1 (1.37) --------------------------------------------

_TO_V1ALPHA2_MODE = {"all": "PodGroup", "single": "Pod"}
_TO_V1BETA1_MODE = {v: k for k, v in _TO_V1ALPHA2_MODE.items()}
_V1BETA1_ONLY = ("parentCompositePodGroupName", "preemptionPolicy")


def gang_as(obj: Obj, api_version: str) -> Obj:
    """A Workload or PodGroup rewritten from one gang API version to the other.

    What differs (``k8s.io/api/scheduling``, v0.36 v1alpha2 and v0.37 v1beta1):

    * PodGroup ``spec.podGroupTemplateRef.workload.{workloadName, podGroupTemplateName}``
      (v1alpha2) is ``spec.workloadRef.{workloadName, templateName}`` (v1beta1);
    * ``disruptionMode`` is a string ``PodGroup`` / ``Pod`` (v1alpha2) and a one-of struct
      ``{all: {}}`` / ``{single: {}}`` (v1beta1), in PodGroups and Workload templates.

    v1beta1's composite groups and ``preemptionPolicy`` have no v1alpha2 form: ValueError.
    """
    if obj.get("apiVersion") == api_version:
        return obj
    if api_version not in (GANG_V1ALPHA2, GANG_V1BETA1):
        raise ValueError(f"not a gang API version: {api_version}")
    out = copy.deepcopy(obj)
    out["apiVersion"] = api_version
    spec = out.get("spec") or {}
    down = api_version == GANG_V1ALPHA2
    if obj.get("kind") == "Workload":
        if down and spec.get("compositePodGroupTemplates"):
            raise ValueError(f"{_name(obj)}: spec.compositePodGroupTemplates has no {GANG_V1ALPHA2} form")
        for i, template in enumerate(spec.get("podGroupTemplates") or []):
            _convert_group_fields(template, down, f"{_name(obj)}: spec.podGroupTemplates[{i}]")
        return out
    _convert_group_fields(spec, down, f"{_name(obj)}: spec")
    if down and "workloadRef" in spec:
        ref = spec.pop("workloadRef") or {}
        spec["podGroupTemplateRef"] = {"workload": {"workloadName": ref.get("workloadName", ""),
                                                    "podGroupTemplateName": ref.get("templateName", "")}}
    elif not down and "podGroupTemplateRef" in spec:
        ref = (spec.pop("podGroupTemplateRef") or {}).get("workload") or {}
        spec["workloadRef"] = {"workloadName": ref.get("workloadName", ""),
                               "templateName": ref.get("podGroupTemplateName", "")}
    return out


def _convert_group_fields(spec: Obj, down: bool, where: str) -> None:
    """The fields a PodGroup and a Workload's PodGroup template share, converted in place."""
    if down:
        for k in _V1BETA1_ONLY:
            if spec.get(k) is not None:
                raise ValueError(f"{where}.{k} has no {GANG_V1ALPHA2} form")
    mode = spec.get("disruptionMode")
    if mode is None:
        return
    if down:
        (choice,) = mode.keys()
        spec["disruptionMode"] = _TO_V1ALPHA2_MODE[choice]
    else:
        spec["disruptionMode"] = {_TO_V1BETA1_MODE[mode]: {}}


def _name(obj: Obj) -> str:
    md = obj.get("metadata") or {}
    ns = f"{md['namespace']}/" if md.get("namespace") else ""
    return f"{obj.get('kind')} {ns}{md.get('name')}"
