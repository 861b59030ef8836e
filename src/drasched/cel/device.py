"""The ``device`` variable of a DRA selector, built once per ResourceSlice device.

Attribute values are Python ``int``/``bool``/``str``/:class:`Semver`; capacities are
:class:`Quantity`. Maps are keyed by domain and then by name, as upstream's CEL input is.
A view is treated as immutable once built: ``cache_key`` is computed on first use and kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drasched.cel.semver import Semver, SemverError
from drasched.quantity import Quantity

__all__ = ["AttributeValue", "DeviceView", "device_view_from_slice_device", "split_qualified_name"]

AttributeValue = int | bool | str | Semver


class DeviceView:
    """What a selector sees of one device (upstream ``cel.Device``)."""

    __slots__ = ("_key", "allow_multiple_allocations", "attributes", "capacity", "driver")

    def __init__(
        self,
        driver: str,
        attributes: dict[str, dict[str, AttributeValue]],
        capacity: dict[str, dict[str, Quantity]],
        allow_multiple_allocations: bool = False,
    ) -> None:
        self.driver = driver
        self.attributes = attributes
        self.capacity = capacity
        self.allow_multiple_allocations = allow_multiple_allocations
        self._key: tuple[Any, ...] | None = None

    @property
    def cache_key(self) -> tuple[Any, ...]:
        """A hashable identity of everything a selector can observe (for memoizing matches).

        Values carry their type name so that ``True`` and ``1`` do not collide.
        """
        key = self._key
        if key is None:
            key = (
                self.driver,
                self.allow_multiple_allocations,
                tuple(
                    (dom, tuple(sorted((n, type(v).__name__, v) for n, v in attrs.items())))
                    for dom, attrs in sorted(self.attributes.items())
                ),
                tuple((dom, tuple(sorted(caps.items()))) for dom, caps in sorted(self.capacity.items())),
            )
            self._key = key
        return key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceView):
            return NotImplemented
        return self.cache_key == other.cache_key

    def __hash__(self) -> int:
        return hash(self.cache_key)

    def __repr__(self) -> str:
        return (
            f"DeviceView(driver={self.driver!r}, attributes={self.attributes!r}, "
            f"capacity={self.capacity!r}, allow_multiple_allocations={self.allow_multiple_allocations!r})"
        )


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """Upstream ``parseQualifiedName``: ``domain/id``, or the driver's domain for a bare id."""
    sep = name.find("/")
    if sep < 0:
        return default_domain, name
    return name[:sep], name[sep + 1 :]


def _attribute_value(name: str, attr: Mapping[str, Any]) -> AttributeValue:
    """Upstream ``getAttributeValue``: exactly one of int, bool, string, version."""
    if not isinstance(attr, Mapping):
        raise ValueError(f"attribute {name}: unsupported attribute value")
    if attr.get("int") is not None:
        v = attr["int"]
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"attribute {name}: int value must be an integer")
        return v
    if attr.get("bool") is not None:
        v = attr["bool"]
        if not isinstance(v, bool):
            raise ValueError(f"attribute {name}: bool value must be a boolean")
        return v
    if attr.get("string") is not None:
        return str(attr["string"])
    if attr.get("version") is not None:
        try:
            return Semver.parse(str(attr["version"]))
        except SemverError as e:
            raise ValueError(f"attribute {name}: parse semantic version: {e}") from None
    raise ValueError(f"attribute {name}: unsupported attribute value")


def device_view_from_slice_device(driver: str, device: Mapping[str, Any]) -> DeviceView:
    """Build the view of one ``ResourceSlice.spec.devices[]`` entry (wire form, camelCase).

    Raises ValueError for an attribute upstream could not convert (bad version, no value);
    upstream reports that when a selector is evaluated against the device.
    """
    attributes: dict[str, dict[str, AttributeValue]] = {}
    for name, attr in (device.get("attributes") or {}).items():
        domain, ident = split_qualified_name(name, driver)
        attributes.setdefault(domain, {})[ident] = _attribute_value(name, attr)
    capacity: dict[str, dict[str, Quantity]] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = split_qualified_name(name, driver)
        raw = cap.get("value") if isinstance(cap, Mapping) else cap
        if raw is None:
            raise ValueError(f"capacity {name}: missing value")
        capacity.setdefault(domain, {})[ident] = Quantity.parse(raw)
    return DeviceView(driver, attributes, capacity, bool(device.get("allowMultipleAllocations") or False))
