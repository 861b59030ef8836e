"""DRA-backed extended resources (KEP-5004): which DeviceClass serves a resource name, and
the device requests of the special per-pod claim.

Upstream semantics (kube-scheduler's DynamicResources plugin, ``extendeddynamicresources.go``,
and the DRA extended-resource cache), with the corrections docs/design.md records:

* every DeviceClass serves its implicit name ``deviceclass.resource.kubernetes.io/<class>``;
  a class may also serve an explicit ``spec.extendedResourceName``; when two classes claim one
  explicit name, the later-created wins and a tie goes to the lexicographically first name;
* the special claim has one ExactCount request per (container, resource), named
  ``container-<i>-request-<j>``: i indexes initContainers then containers, j is the index of
  the resource among ALL of that container's sorted request keys;
* a non-sidecar init container reuses the requests of the long-lived containers that follow
  it until its count is covered, adds one request for the remainder, and the remainders of
  several init containers collapse into the largest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from drasched.quantity import Quantity

Obj = dict[str, Any]

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
NATIVE_RESOURCES = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


def implicit_name(class_name: str) -> str:
    return IMPLICIT_PREFIX + class_name


@dataclass
class DeviceClassByResource:
    """Resource name -> DeviceClass name, built once per snapshot, O(1) lookups."""

    by_resource: dict[str, str] = field(default_factory=dict)
    explicit_by_class: dict[str, str] = field(default_factory=dict)
    shadowed: dict[str, list[str]] = field(default_factory=dict)  # explicit name -> losing classes

    @classmethod
    def build(cls, classes: Iterable[Obj]) -> DeviceClassByResource:
        index = cls()
        claimants: dict[str, list[tuple[str, str]]] = {}
        for dc in classes:
            md = dc.get("metadata") or {}
            name = md.get("name", "")
            if not name:
                continue
            index.by_resource[implicit_name(name)] = name
            explicit = (dc.get("spec") or {}).get("extendedResourceName")
            if explicit:
                claimants.setdefault(explicit, []).append((md.get("creationTimestamp") or "", name))
        for resource, entries in claimants.items():
            # Later-created wins; equal timestamps go to the lexicographically first name.
            newest = max(ts for ts, _ in entries)
            winner = min(n for ts, n in entries if ts == newest)
            if resource.startswith(IMPLICIT_PREFIX):
                continue  # implicit names never clash: the class of that name keeps it
            index.by_resource[resource] = winner
            index.explicit_by_class[winner] = resource
            losers = sorted(n for _, n in entries if n != winner)
            if losers:
                index.shadowed[resource] = losers
        return index

    def class_for(self, resource: str) -> str | None:
        return self.by_resource.get(resource)

    def __contains__(self, resource: object) -> bool:
        return resource in self.by_resource


def _requests_of(container: Mapping[str, Any]) -> dict[str, Any]:
    return ((container.get("resources") or {}).get("requests")) or {}


def _count(value: Any) -> int:
    return Quantity.parse(str(value)).value_int()


def pod_dra_resources(pod: Obj, index: DeviceClassByResource) -> dict[str, int]:
    """Extended resources of the pod that a DeviceClass serves, with the pod's effective count.

    The effective count follows upstream's pod request rule: the sum over long-lived containers,
    or the largest non-sidecar init container's request if that is larger.
    """
    spec = pod.get("spec") or {}
    long_sum: dict[str, int] = {}
    init_max: dict[str, int] = {}
    sidecar_sum: dict[str, int] = {}
    for c in spec.get("initContainers") or []:
        for r, q in _requests_of(c).items():
            if r in NATIVE_RESOURCES or r not in index:
                continue
            n = _count(q)
            if c.get("restartPolicy") == "Always":
                sidecar_sum[r] = sidecar_sum.get(r, 0) + n
                long_sum[r] = long_sum.get(r, 0) + n
            else:
                # an init container runs next to the sidecars started before it
                init_max[r] = max(init_max.get(r, 0), n + sidecar_sum.get(r, 0))
    for c in spec.get("containers") or []:
        for r, q in _requests_of(c).items():
            if r in NATIVE_RESOURCES or r not in index:
                continue
            long_sum[r] = long_sum.get(r, 0) + _count(q)
    out = {r: max(long_sum.get(r, 0), init_max.get(r, 0)) for r in set(long_sum) | set(init_max)}
    return {r: n for r, n in out.items() if n > 0}


@dataclass
class SpecialClaimRequests:
    """The special claim's ``spec.devices.requests`` and the pod's container mappings."""

    device_requests: list[Obj]
    mappings: list[Obj]


def _request_for(
    index: int, container: Mapping[str, Any], resource: str, class_name: str, reusable: list[Obj | None]
) -> tuple[Obj | None, list[Obj]]:
    requests = _requests_of(container)
    if resource not in requests:
        return None, []
    want = _count(requests[resource])
    if want == 0:
        return None, []
    mappings: list[Obj] = []
    covered = 0
    for r in reusable:
        if r is None:
            continue
        covered += r["exactly"]["count"]
        mappings.append({"containerName": container.get("name"), "resourceName": resource, "requestName": r["name"]})
        if covered >= want:
            return None, mappings
    position = sorted(requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {"name": name, "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount",
                                         "count": want - covered}}
    mappings.append({"containerName": container.get("name"), "resourceName": resource, "requestName": name})
    return request, mappings


def special_claim_requests(
    pod: Obj, resources: Iterable[str], index: DeviceClassByResource
) -> SpecialClaimRequests:
    """Device requests for the resources in ``resources`` that this node serves through DRA."""
    spec = pod.get("spec") or {}
    inits = list(spec.get("initContainers") or [])
    containers = inits + list(spec.get("containers") or [])
    long_lived = [i for i, c in enumerate(containers) if i >= len(inits) or c.get("restartPolicy") == "Always"]
    short_lived = [i for i in range(len(inits)) if i not in long_lived]
    device_requests: list[Obj] = []
    mappings: list[Obj] = []
    for resource in sorted(set(resources)):
        class_name = index.class_for(resource)
        if class_name is None:
            continue
        long_requests: list[Obj | None] = [None] * len(containers)
        long_mappings: list[Obj] = []
        for i in long_lived:
            req, mps = _request_for(i, containers[i], resource, class_name, [])
            long_requests[i] = req
            long_mappings += mps
        largest: Obj | None = None
        short_names: set[str] = set()
        short_mappings: list[Obj] = []
        for i in short_lived:
            req, mps = _request_for(i, containers[i], resource, class_name, long_requests[i:])
            if req is not None:
                short_names.add(req["name"])
                if largest is None or largest["exactly"]["count"] < req["exactly"]["count"]:
                    largest = req
            short_mappings += mps
        if largest is not None and len(short_names) > 1:
            for m in short_mappings:
                if m["requestName"] in short_names:
                    m["requestName"] = largest["name"]
        if largest is not None:
            device_requests.append(largest)
        device_requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    device_requests.sort(key=lambda r: r["name"])
    return SpecialClaimRequests(device_requests, mappings)


def is_extended_resource_claim(claim: Obj) -> bool:
    return ((claim.get("metadata") or {}).get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"
