"""Names the scheduler shares with users and other components (labels, resources, reasons)."""

from __future__ import annotations

from typing import Final

POD_GROUP_LABEL: Final = "drasched.io/pod-group"
QUEUE_LABEL: Final = "drasched.io/queue"
DEFAULT_QUEUE: Final = "default"
SCHEDULER_NAME: Final = "drasched"

CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
GPU: Final = "nvidia.com/gpu"
FIRST_RESOURCES: Final = (CPU, MEMORY, PODS, GPU)
"""The fixed head of every snapshot's resource index; other scalars follow in name order."""

IMPLICIT_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
"""Implicit extended-resource name of a DeviceClass (KEP-5004); our accounting key for it."""

EXTENDED_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/extended-resource-claim"

POD_SCHEDULED: Final = "PodScheduled"
UNSCHEDULABLE: Final = "Unschedulable"
QUEUE_VALID: Final = "Valid"

PODGROUP_API_GROUP: Final = "scheduling.drasched.io"
PODGROUP_RESOURCE: Final = "podgroups"
