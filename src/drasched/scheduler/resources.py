"""Resource amounts as numbers: units, pod requests, and the per-snapshot resource index.

Vectors hold float64 in integral units (:mod:`drasched.api.pod_requests`, which also holds
``pod_requests`` and ``to_units``, shared with the kubelet's admission).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction

from drasched.api.pod_requests import Requests, pod_requests, to_units
from drasched.quantity import Format, Quantity, QuantityError
from drasched.scheduler.constants import CPU, FIRST_RESOURCES, MEMORY

_BINARY = frozenset({MEMORY, "ephemeral-storage"})


def exact_units(name: str, raw: str | int | float) -> Fraction:
    """Like :func:`to_units` but exact (queue quotas may be fractional, e.g. ``1.5`` GPUs)."""
    q = Quantity.parse(raw)
    return q.value * 1000 if name == CPU else q.value


def format_units(name: str, units: float | Fraction) -> str:
    """Vector units back to a canonical quantity string (rounded down to the milli-unit)."""
    value = Fraction(units) / 1000 if name == CPU else Fraction(units)
    if value.denominator == 1:
        fmt = Format.BINARY_SI if name in _BINARY else Format.DECIMAL_SI
        return str(Quantity.from_int(int(value), fmt))
    if name in _BINARY:
        return str(Quantity.from_int(int(value), Format.BINARY_SI))
    return str(Quantity.from_milli(int(value * 1000), Format.DECIMAL_SI))


@dataclass(frozen=True)
class ResourceIndex:
    """Resource names in a fixed order for one snapshot: cpu, memory, pods, gpu, then the rest sorted."""

    names: tuple[str, ...]
    pos: dict[str, int] = field(default_factory=dict, compare=False)

    @staticmethod
    def build(extra: Iterable[str]) -> ResourceIndex:
        rest = sorted(set(extra) - set(FIRST_RESOURCES))
        names = (*FIRST_RESOURCES, *rest)
        return ResourceIndex(names, {n: i for i, n in enumerate(names)})

    def __len__(self) -> int:
        return len(self.names)


__all__ = [
    "QuantityError",
    "Requests",
    "ResourceIndex",
    "exact_units",
    "format_units",
    "pod_requests",
    "to_units",
]
