"""Dynamic resource allocation as plugins: ResourceClaims (upstream DynamicResources) and
extended resources that DeviceClasses serve (KEP-5004)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from drasched.scheduler.framework.api import ADD, DELETE, UPDATE, ClusterEvent
from drasched.scheduler.plugins.fit import insufficient

if TYPE_CHECKING:
    from drasched.dra.allocator import AllocationOutcome
    from drasched.scheduler.extended import ExtendedIndex, PodExtended
    from drasched.scheduler.session import Session

Obj = dict[str, Any]

MSG_DRA_DISABLED = "pod uses ResourceClaims and the scheduler's dra plugin is disabled"

_DEVICES_CHANGED = (ClusterEvent("ResourceSlice", ADD), ClusterEvent("ResourceSlice", UPDATE),
                    ClusterEvent("ResourceClaim", DELETE), ClusterEvent("ResourceClaim", UPDATE),
                    ClusterEvent("DeviceClass", ADD), ClusterEvent("DeviceClass", UPDATE),
                    ClusterEvent("Pod", DELETE), ClusterEvent("Node", ADD), ClusterEvent("Node", UPDATE))


class DynamicResources:
    """Allocates a pod's ResourceClaims on a node with the structured-parameters allocator.

    Disabled: pods that use ResourceClaims are not scheduled; they stay pending with a
    message saying so (placing them without devices would only fail at the kubelet).
    """

    name = "dra"

    def events(self) -> tuple[ClusterEvent, ...]:
        return (*_DEVICES_CHANGED, ClusterEvent("ResourceClaim", ADD))

    def allocate(self, session: Session, node: int, claims: list[Obj], namespace: str) -> AllocationOutcome:
        snap = session.snap
        return snap.allocator.allocate(snap.nodes[node].obj, claims, snap.namespace_labels.get(namespace, {}))


class ExtendedResources:
    """Lets a DeviceClass serve extended resources (KEP-5004): per node, the device plugin's
    capacity or a special ResourceClaim allocated from DRA devices.

    Disabled (or with ``dra`` disabled): only device plugins serve extended resources, as
    upstream without the DRAExtendedResource feature; nodes where only DRA devices could
    serve a request are reported as short of it.
    """

    name = "extendedResources"

    def events(self) -> tuple[ClusterEvent, ...]:
        return _DEVICES_CHANGED


def device_plugin_nodes(ext: ExtendedIndex, px: PodExtended) -> np.ndarray:
    """Nodes whose device plugins serve every extended resource of the pod that a DeviceClass maps."""
    mask = np.ones(len(ext.nodes), dtype=bool)
    for r in px.mapped:
        mask &= ext.dp(r)
    return mask


def device_plugin_reasons(ext: ExtendedIndex, px: PodExtended, among: np.ndarray, into: Counter[str]) -> np.ndarray:
    """Count nodes of ``among`` without a device plugin for a mapped resource; return them."""
    failing = np.zeros_like(among)
    for r in sorted(px.mapped):
        bad = among & ~ext.dp(r) & ~failing
        if bad.any():
            into[insufficient(r)] += int(bad.sum())
            failing |= bad
    return failing
