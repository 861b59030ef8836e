"""``status.containerStatuses[].allocatedResourcesStatus`` for DRA claims, as upstream's kubelet writes it.

Why: Kubernetes 1.36 made the kubelet's ``ResourceHealthStatus`` gate (KEP-4680) beta and on by
default (``pkg/features/kube_features.go``; the generated 1.36 component reference lists
``ResourceHealthStatus=true|false (BETA - default=true)`` and ``ResourceHealthStatusMessage``
likewise), and 1.37 keeps it on, so every pod whose containers use prepared DRA claims carries this
field; the simulated kubelet writes it so simulated pods look like real ones.

What upstream does (``pkg/kubelet/cm/dra/manager.go`` ``UpdateAllocatedResourcesStatus``, called for
every generated pod status by ``kubelet_pods.go`` ``generateAPIPodStatus`` through
``container_manager_linux.go`` when ``ResourceHealthStatus`` is on):

* only regular containers with ``resources.claims``; per entry, the name ``claim:<entry>`` or
  ``claim:<entry>/<request>`` (``<entry>`` is the pod's ``resourceClaims[].name`` the container
  names, not the ResourceClaim's name);
* only claims the kubelet prepared (a claim missing from its claim cache is skipped); one
  ``resources`` item per device of the claim, skipping devices of another request when the entry
  names one (subrequests compare by their base request); ``resourceID`` is the device's first CDI
  device ID, else ``<driver>/<pool>/<device>``; a repeated ``resourceID`` is listed once;
* ``health`` is what the driver last streamed for the device over its DRAResourceHealth service
  (``Healthy``/``Unhealthy``/``Unknown``), and ``message`` the driver's text when it sent one
  (``ResourceHealthStatusMessage``). A driver that does not implement the service, a device it does
  not report, or a report older than its timeout gives ``Unknown`` and no message
  (``healthinfo.go`` ``getHealthInfo`` starts from Unknown);
* an entry left without resources is dropped, and an empty list is not written (``omitempty``).

Deterministic order (upstream rebuilds the list from a Go map, so its order is random): entries in
the order of the container's ``resources.claims``; within one, drivers by name, then the driver's
devices in the order of its prepare answer (upstream also walks the claim's drivers from a map).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

Obj = dict[str, Any]

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
UNKNOWN = "Unknown"


@dataclass(frozen=True)
class DeviceHealth:
    """What a driver's DRAResourceHealth stream last said about one device."""

    health: str
    message: str = ""


class PreparedDeviceLike(Protocol):
    """One device of a prepare answer (``drasched.node.plugin.PreparedDevice``)."""

    @property
    def request_names(self) -> tuple[str, ...]: ...

    @property
    def pool_name(self) -> str: ...

    @property
    def device_name(self) -> str: ...

    @property
    def cdi_device_ids(self) -> tuple[str, ...]: ...


HealthLookup = Callable[[str, str, str], DeviceHealth | None]
"""``(driver, pool, device)`` -> the driver's report, or None (no health service, no report)."""


def _base_request(request: str) -> str:
    """``resourceclaim.BaseRequestRef``: ``req/sub`` -> ``req``."""
    return request.split("/", 1)[0]


def _resource_health(driver: str, device: PreparedDeviceLike, health: HealthLookup) -> Obj:
    """``manager.go`` ``buildResourceHealth``."""
    report = health(driver, device.pool_name, device.device_name) or DeviceHealth(UNKNOWN)
    resource_id = (device.cdi_device_ids[0] if device.cdi_device_ids
                   else f"{driver}/{device.pool_name}/{device.device_name}")
    item: Obj = {"resourceID": resource_id, "health": report.health}
    if report.message:
        item["message"] = report.message
    return item


def allocated_resources_status(
    container: Obj,
    prepared: Mapping[str, Mapping[str, Iterable[PreparedDeviceLike]]],
    health: HealthLookup,
) -> list[Obj]:
    """The container's ``allocatedResourcesStatus`` (empty: write none).

    ``prepared`` maps the pod's claim entry names (``spec.resourceClaims[].name``) to what each
    driver prepared for that entry's claim; an entry absent from it was not prepared.
    """
    by_name: dict[str, list[Obj]] = {}
    for ref in (container.get("resources") or {}).get("claims") or []:
        entry = str(ref.get("name") or "")
        request = str(ref.get("request") or "")
        answers = prepared.get(entry)
        if answers is None:
            continue  # not in the kubelet's claim cache
        name = f"claim:{entry}/{request}" if request else f"claim:{entry}"
        items: list[Obj] = []
        seen: set[str] = set()
        for driver in sorted(answers):
            for device in answers[driver]:
                bases = {_base_request(r) for r in device.request_names}
                if request and bases and _base_request(request) not in bases:
                    continue
                item = _resource_health(driver, device, health)
                if item["resourceID"] in seen:
                    continue
                seen.add(item["resourceID"])
                items.append(item)
        by_name[name] = items  # a repeated entry is rebuilt, as upstream clears and refills it
    return [{"name": name, "resources": items} for name, items in by_name.items() if items]
