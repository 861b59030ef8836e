"""Fractional GPU requests: the ``drasched.io/gpu-fraction`` pod annotation.

A pod asks for part of one GPU with the annotation and exactly ``nvidia.com/gpu: 1`` in its
container requests::

    metadata:
      annotations: {drasched.io/gpu-fraction: "0.5"}
    spec:
      containers:
      - resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}

Why a request of 1 and an annotation: the request keeps the pod valid for the API server and
for the kubelet (extended resources are integers), and the annotation says how much of that
one GPU the pod really takes. Accounting (queue ``allocated``/``requested``, fair share, the
node's GPU row) counts the fraction ``f``, never the 1: two pods of ``0.5`` hold one GPU.

Only DRA can hand out part of a GPU (a share of a device with consumable capacity), so such
a pod never lands on a device-plugin node; see :mod:`drasched.scheduler.extended`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from drasched.quantity import Quantity, QuantityError
from drasched.scheduler.constants import GPU

GPU_FRACTION_ANNOTATION = "drasched.io/gpu-fraction"
KAI_GPU_FRACTION_ANNOTATION = "gpu-fraction"
"""KAI-Scheduler's annotation, read as an alias where drasched's is absent (same meaning)."""

KAI_GPU_MEMORY_ANNOTATION = "gpu-memory"
"""KAI-Scheduler's share of one GPU by memory, in MiB (docs/gpu-sharing/gpu-memory.yaml). Not read
yet: a pod carrying it is not scheduled, and says why (rather than run without a GPU)."""

Obj = dict[str, Any]


def gpu_memory_message(raw: Any) -> str:
    """Why a pod with KAI's ``gpu-memory`` annotation is not scheduled."""
    return (f'annotation {KAI_GPU_MEMORY_ANNOTATION}: "{raw}" (MiB of one GPU, KAI-Scheduler) is not read by '
            f"drasched: it shares a GPU by fraction only; write {GPU_FRACTION_ANNOTATION} (or "
            f"{KAI_GPU_FRACTION_ANNOTATION}) as that memory's share of the GPU's, e.g. \"0.25\" for 20Gi of 80Gi")


class FractionError(ValueError):
    """The annotation cannot be used; the message is the pod's unschedulable reason."""


def gpu_fraction(obj: Obj, requests: dict[str, float]) -> Fraction | None:
    """The fraction a pod asks for, or ``None`` without the annotation.

    ``requests`` are the pod's effective requests (vector units); the annotation needs
    ``nvidia.com/gpu`` to be exactly 1. Raises :class:`FractionError` otherwise.
    """
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if KAI_GPU_MEMORY_ANNOTATION in annotations:
        raise FractionError(gpu_memory_message(annotations[KAI_GPU_MEMORY_ANNOTATION]))
    name = GPU_FRACTION_ANNOTATION if GPU_FRACTION_ANNOTATION in annotations else KAI_GPU_FRACTION_ANNOTATION
    raw = annotations.get(name)
    if raw is None:
        return None
    try:
        value = Quantity.parse(str(raw)).value
    except QuantityError:
        raise FractionError(f'annotation {name}: "{raw}" is not a number') from None
    if not 0 < value < 1:
        raise FractionError(f'annotation {name}: "{raw}" must lie between 0 and 1 (exclusive)')
    if requests.get(GPU, 0.0) != 1.0:
        got = requests.get(GPU, 0.0)
        hint = ": the fraction is a share of the one DRA GPU that request reaches" if got == 0 else ""
        raise FractionError(f"annotation {name} needs a request of exactly {GPU}: 1 "
                            f"(the pod asks {got:g}){hint}")
    return value
