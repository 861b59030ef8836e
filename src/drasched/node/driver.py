"""What a DRA driver written with drasched implements, and what the kit hands it.

The kit (``drasched.node.plugin``) does everything a kubelet plugin must get right for
every driver alike: reading the claim, checking that it is allocated to this driver on
this node, refusing a device another claim holds, serializing calls, idempotency, CDI
files, checkpointing and ResourceSlice publishing. A driver only says what devices it has
and what a container needs to use one, so a new driver is a small class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from drasched.node.cdi import ContainerEdits
from drasched.node.resource_health import DeviceHealth

Obj = dict[str, Any]


class ConfigError(ValueError):
    """An opaque claim or class configuration the driver cannot use; the message says why."""


@dataclass
class PoolSpec:
    """The devices (wire-form ``Device`` dicts) and shared counter sets of one pool."""

    devices: list[Obj] = field(default_factory=list)
    shared_counters: list[Obj] = field(default_factory=list)


@dataclass(frozen=True)
class ClaimRef:
    """A claim as the kubelet names it in ``NodePrepareResources``."""

    namespace: str
    uid: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass
class AllocatedDevice:
    """One allocation result of a claim for this driver, with what the kit knows of it."""

    request: str
    pool: str
    device: str
    share_id: str = ""
    admin_access: bool = False
    consumed_capacity: dict[str, str] = field(default_factory=dict)
    published: Obj = field(default_factory=dict)
    """The device as this driver published it (attributes, capacity...)."""
    config: Any = None
    """The opaque parameters for this driver that apply to this request (last one wins, class configs
    before claim configs; one naming no request only if :meth:`Driver.config_applies`), if any."""


class Driver(ABC):
    """A DRA driver: its devices and how to hand one to a container."""

    name: str
    """The driver name (a DNS subdomain), as in ``ResourceSlice.spec.driver``."""

    @abstractmethod
    def pools(self, node_name: str) -> dict[str, PoolSpec]:
        """The pools to publish for ``node_name``, by pool name (usually one, named after the node)."""

    def validate_config(self, parameters: Any) -> Any:
        """Check opaque parameters; return the parsed form handed back in ``AllocatedDevice.config``.

        Raise ``ConfigError`` with a message a user can act on. The default accepts none.
        """
        raise ConfigError(f"driver {self.name} takes no opaque configuration")

    def config_applies(self, config: Any, published: Obj) -> bool:
        """Whether ``config`` (as :meth:`validate_config` parsed it), from an allocation config that
        names no request (it applies to every request of the claim), is meant for ``published``.

        When it is not, the kit passes it over for that device, and the config before it in
        precedence applies instead; a config that names the device's request is always handed
        over, for :meth:`prepare` to refuse if it must. The default: every config applies.
        """
        return True

    @abstractmethod
    def prepare(self, claim: ClaimRef, device: AllocatedDevice) -> ContainerEdits:
        """Make one allocated device usable; return what a container needs. Must be idempotent."""

    def unprepare(self, claim: ClaimRef, devices: list[AllocatedDevice]) -> None:  # noqa: B027
        """Undo ``prepare`` for the claim's devices (also called after a failed prepare). Default: nothing."""

    def device_health(self, pool: str, device: str) -> DeviceHealth | None:
        """What the driver's DRAResourceHealth service (KEP-4680) reports for a device it published,
        or None when the driver does not implement that service (the kubelet then shows ``Unknown``,
        see :mod:`drasched.node.resource_health`). Default: no health service."""
        return None
