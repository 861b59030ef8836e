"""Dynamic resource allocation as plugins: ResourceClaims (upstream DynamicResources) and
extended resources that DeviceClasses serve (KEP-5004)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from drasched.scheduler.framework.api import ADD, DELETE, UPDATE, ClusterEvent, PodState

if TYPE_CHECKING:
    from drasched.dra.allocator import AllocationOutcome
    from drasched.scheduler.session import Session

Obj = dict[str, Any]

MSG_DRA_DISABLED = "pod uses ResourceClaims and the scheduler's dra plugin is disabled"
MSG_EXTENDED_DISABLED = ("extended resource {} is served by a DeviceClass (DRA) and the scheduler's "
                         "extendedResources plugin is disabled")

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
    """Routes extended resources a DeviceClass serves to DRA devices or the device plugin, per node.

    Disabled: a pod whose extended resources a DeviceClass serves is not scheduled (with a
    message naming the resource); resources only device plugins serve are unaffected.
    """

    name = "extendedResources"

    def events(self) -> tuple[ClusterEvent, ...]:
        return _DEVICES_CHANGED

    def filter(self, state: PodState, among: np.ndarray) -> np.ndarray:
        px = state.extended
        if px is None:
            return among
        return state.session.snap.extended.fit(state.session.idle, px, among)

    def reasons(self, state: PodState, among: np.ndarray, into: Counter[str]) -> np.ndarray:
        """Messages only; :func:`~drasched.scheduler.actions.task` adds the allocator's reasons."""
        px = state.extended
        if px is None:
            return np.zeros_like(among)
        s = state.session
        failing, _, _ = s.snap.extended.reasons(s.idle, s.used, px, among, into)
        return failing
