"""The kubelet's DRA manager, in process: what the simulated kubelet calls on bind and on exit.

It does what the kubelet's DRA manager does (``pkg/kubelet/cm/dra``), against plugins
registered here instead of discovered on disk: find the pod's claims, batch them per
driver, call ``NodePrepareResources`` once per driver, and remember which pods use which
claim so that ``NodeUnprepareResources`` is called only when the last pod on the node
using a claim is gone. A plugin is a ``KubeletPlugin`` (in process, no socket) or a
``KubeletPluginClient`` (a real socket); both answer the same two calls, so the
simulation runs the same plugin code a cluster does.

Usage from a simulated kubelet::

    registry = DriverRegistry()
    start_driver(store, registry, "node-1", GpuDriver.mock("node-1"))  # slices + plugin
    err = prepare_in_process(store, registry, pod)     # None, or why the pod cannot start
    ...
    err = unprepare_in_process(store, registry, pod)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from drasched.api import kinds
from drasched.api.errors import ApiError, NotFound
from drasched.node.driver import ClaimRef, Driver
from drasched.node.plugin import KubeletPlugin, PrepareResult
from drasched.node.publisher import SlicePublisher
from drasched.node.resource_health import DeviceHealth
from drasched.store.base import ClusterStore

Obj = dict[str, Any]


class DRAPluginLike(Protocol):
    """What the kubelet calls on a registered driver (``KubeletPlugin`` or ``KubeletPluginClient``)."""

    @property
    def driver_name(self) -> str: ...

    def node_prepare_resources(self, claims: Sequence[ClaimRef]) -> dict[str, PrepareResult]: ...

    def node_unprepare_resources(self, claims: Sequence[ClaimRef]) -> dict[str, str]: ...


@dataclass
class _ClaimInfo:
    ref: ClaimRef
    drivers: tuple[str, ...]
    pods: set[str] = field(default_factory=set)
    results: dict[str, PrepareResult] = field(default_factory=dict)


class DriverRegistry:
    """Registered plugins per node, and the claims prepared on each node with the pods using them."""

    def __init__(self) -> None:
        self._plugins: dict[tuple[str, str], DRAPluginLike] = {}
        self._by_node: dict[str, set[str]] = {}
        """Node -> driver names: the simulated kubelet asks per pod, so it must not scan."""
        self._claims: dict[tuple[str, str], _ClaimInfo] = {}

    def register(self, node_name: str, plugin: DRAPluginLike) -> None:
        self._plugins[(node_name, plugin.driver_name)] = plugin
        self._by_node.setdefault(node_name, set()).add(plugin.driver_name)

    def unregister(self, node_name: str, driver_name: str) -> None:
        self._plugins.pop((node_name, driver_name), None)
        names = self._by_node.get(node_name)
        if names is not None:
            names.discard(driver_name)
            if not names:
                del self._by_node[node_name]

    def forget_driver(self, node_name: str, driver_name: str) -> None:
        """Drop what the driver prepared on the node: its plugin is gone, and its state with it,
        so a later unprepare has nothing to call (and must not fail for that)."""
        for key, info in list(self._claims.items()):
            if key[0] != node_name or driver_name not in info.drivers:
                continue
            info.drivers = tuple(d for d in info.drivers if d != driver_name)
            info.results.pop(driver_name, None)
            if not info.drivers:
                del self._claims[key]

    def plugin(self, node_name: str, driver_name: str) -> DRAPluginLike | None:
        return self._plugins.get((node_name, driver_name))

    def drivers(self, node_name: str) -> list[str]:
        return sorted(self._by_node.get(node_name, ()))

    def prepared(self, node_name: str, claim_uid: str) -> dict[str, PrepareResult] | None:
        """Driver -> answer for a claim prepared on the node by all its drivers, or None."""
        info = self._claims.get((node_name, claim_uid))
        if info is None or set(info.results) != set(info.drivers):
            return None
        return dict(info.results)

    def device_health(self, node_name: str, driver_name: str, pool: str, device: str) -> DeviceHealth | None:
        """The health the driver's plugin on the node streams for a device, or None when it serves
        no DRAResourceHealth (a plugin reached over a socket: drasched's gRPC server serves none)."""
        plugin = self._plugins.get((node_name, driver_name))
        report = getattr(plugin, "device_health", None)
        return report(pool, device) if callable(report) else None

    def pods_using(self, node_name: str, claim_uid: str) -> set[str]:
        info = self._claims.get((node_name, claim_uid))
        return set(info.pods) if info is not None else set()


def start_driver(store: ClusterStore, driver_registry: DriverRegistry, node_name: str,
                 driver: Driver) -> KubeletPlugin:
    """Run ``driver`` on a simulated node: publish its slices, register its plugin (no sockets).

    What a simulated node that declares a driver's mock inventory needs, e.g.
    ``start_driver(store, registry, "node-1", GpuDriver.mock("node-1", MockGpuConfig(count=4)))``.
    """
    plugin = KubeletPlugin(store, driver, node_name)
    SlicePublisher(store, driver.name, node_name).publish(plugin.pools())
    driver_registry.register(node_name, plugin)
    return plugin


def stop_driver(store: ClusterStore, driver_registry: DriverRegistry, node_name: str, driver_name: str) -> None:
    """Deregister the driver on the node and delete its slices (what the kubelet does when a plugin goes)."""
    driver_registry.unregister(node_name, driver_name)
    driver_registry.forget_driver(node_name, driver_name)
    SlicePublisher(store, driver_name, node_name).unpublish()


def _pod_claim_names(pod: Obj) -> list[str]:
    """Names of the claims a pod uses: its ``spec.resourceClaims`` resolved through status, and
    the extended-resource claim."""
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    generated = {s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []}
    names: list[str] = []
    for pc in spec.get("resourceClaims") or []:
        name = pc.get("resourceClaimName") or generated.get(pc.get("name"))
        if name and name not in names:
            names.append(name)
    ext = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if ext and ext not in names:
        names.append(ext)
    return names


def pod_claims(store: ClusterStore, pod: Obj) -> tuple[list[Obj], list[str]]:
    """The pod's claims from the store, and a message for each one that cannot be read."""
    ns = (pod.get("metadata") or {}).get("namespace") or "default"
    claims, errors = [], []
    spec_claims = (pod.get("spec") or {}).get("resourceClaims") or []
    templated = [pc.get("name") for pc in spec_claims if pc.get("resourceClaimTemplateName")]
    statuses = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    for missing in (n for n in templated if n not in statuses):
        errors.append(f"claim {missing!r} of the pod has no generated ResourceClaim yet")
    for name in _pod_claim_names(pod):
        try:
            claims.append(store.get(kinds.RESOURCE_CLAIM, name, ns))
        except NotFound:
            errors.append(f"ResourceClaim {ns}/{name} not found")
        except ApiError as exc:
            errors.append(f"reading ResourceClaim {ns}/{name}: {exc}")
    return claims, errors


def _ref(claim: Obj) -> ClaimRef:
    md = claim.get("metadata") or {}
    return ClaimRef(namespace=md.get("namespace") or "default", uid=md.get("uid", ""), name=md.get("name", ""))


def _drivers(claim: Obj) -> tuple[str, ...]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return tuple(sorted({r.get("driver", "") for r in results}))


def _node_and_uid(pod: Obj) -> tuple[str, str]:
    return (pod.get("spec") or {}).get("nodeName") or "", (pod.get("metadata") or {}).get("uid", "")


def prepare_in_process(
    store: ClusterStore,
    driver_registry: DriverRegistry,
    pod: Obj,
    claims: Iterable[Obj] | None = None,
    *,
    ignore_unregistered_drivers: bool = False,
) -> str | None:
    """Prepare the claims of a pod bound to a node; None when all are ready, else why not.

    ``claims`` defaults to the pod's claims read from the store. A claim whose driver has no
    plugin on the node is an error (the kubelet's "driver not registered") unless
    ``ignore_unregistered_drivers``, for nodes whose slices are hand-written. Calls are
    batched per driver and idempotent: calling again after a failure retries what failed.
    """
    node, pod_uid = _node_and_uid(pod)
    if not node:
        return "pod is not bound to a node"
    errors: list[str] = []
    if claims is None:
        claim_list, errors = pod_claims(store, pod)
    else:
        claim_list = list(claims)
    batches: dict[str, list[ClaimRef]] = {}
    pending: list[tuple[ClaimRef, tuple[str, ...]]] = []
    for claim in claim_list:
        ref = _ref(claim)
        if not (claim.get("status") or {}).get("allocation"):
            errors.append(f"ResourceClaim {ref} is not allocated")
            continue
        drivers = tuple(d for d in _drivers(claim)
                        if not (ignore_unregistered_drivers and driver_registry.plugin(node, d) is None))
        missing = [d for d in drivers if driver_registry.plugin(node, d) is None]
        if missing:
            errors.append(f"ResourceClaim {ref}: DRA driver {missing[0]} is not registered on node {node}")
            continue
        pending.append((ref, drivers))
        for d in drivers:
            batches.setdefault(d, []).append(ref)
    answers: dict[tuple[str, str], PrepareResult] = {}
    for driver, refs in sorted(batches.items()):
        plugin = driver_registry.plugin(node, driver)
        assert plugin is not None
        try:
            got = plugin.node_prepare_resources(refs)
        except Exception as exc:  # a broken plugin fails this pod, not the kubelet
            errors.append(f"NodePrepareResources of driver {driver} on node {node} failed: {exc}")
            continue
        for ref in refs:
            r = got.get(ref.uid)
            if r is None:
                errors.append(f"ResourceClaim {ref}: driver {driver} returned no result")
            elif r.error:
                errors.append(f"ResourceClaim {ref}: driver {driver}: {r.error}")
            else:
                answers[(driver, ref.uid)] = r
    # Remember every claim tried, even one that failed with some driver: what the others
    # prepared must be unprepared when the pod goes (unprepare is harmless where nothing was).
    for ref, drivers in pending:
        info = driver_registry._claims.setdefault((node, ref.uid), _ClaimInfo(ref, drivers))
        info.results.update({d: answers[(d, ref.uid)] for d in drivers if (d, ref.uid) in answers})
        if pod_uid:
            info.pods.add(pod_uid)
    return "; ".join(errors) if errors else None


def unprepare_in_process(
    store: ClusterStore,
    driver_registry: DriverRegistry,
    pod: Obj,
    claims: Iterable[Obj] | None = None,
) -> str | None:
    """Release the pod's use of its claims; unprepare each claim no other pod on the node uses.

    Claims are matched by UID in what this registry prepared, so a claim already deleted
    from the store is still unprepared (its objects are not needed). Returns None or why
    some claim could not be unprepared (call again to retry).
    """
    node, pod_uid = _node_and_uid(pod)
    if not node:
        return None
    if claims is not None:
        uids = {_ref(c).uid for c in claims}
    else:
        names = set(_pod_claim_names(pod))
        ns = (pod.get("metadata") or {}).get("namespace") or "default"
        uids = {uid for (n, uid), info in driver_registry._claims.items()
                if n == node and (pod_uid in info.pods or (info.ref.namespace == ns and info.ref.name in names))}
    errors: list[str] = []
    batches: dict[str, list[ClaimRef]] = {}
    for uid in sorted(uids):
        info = driver_registry._claims.get((node, uid))
        if info is None:
            continue
        info.pods.discard(pod_uid)
        if info.pods:
            continue  # another pod on this node still uses it
        if not info.drivers:
            del driver_registry._claims[(node, uid)]  # no driver prepared it: nothing to call
            continue
        for d in info.drivers:
            batches.setdefault(d, []).append(info.ref)
    failed: set[str] = set()
    for driver, refs in sorted(batches.items()):
        plugin = driver_registry.plugin(node, driver)
        if plugin is None:
            errors.append(f"DRA driver {driver} is not registered on node {node}; cannot unprepare "
                          f"{', '.join(str(r) for r in refs)}")
            failed.update(r.uid for r in refs)
            continue
        try:
            got = plugin.node_unprepare_resources(refs)
        except Exception as exc:
            errors.append(f"NodeUnprepareResources of driver {driver} on node {node} failed: {exc}")
            failed.update(r.uid for r in refs)
            continue
        for ref in refs:
            err = got.get(ref.uid)
            if err is None:
                errors.append(f"ResourceClaim {ref}: driver {driver} returned no result")
                failed.add(ref.uid)
            elif err:
                errors.append(f"ResourceClaim {ref}: driver {driver}: {err}")
                failed.add(ref.uid)
    for refs in batches.values():
        for ref in refs:
            if ref.uid not in failed:
                driver_registry._claims.pop((node, ref.uid), None)
    return "; ".join(errors) if errors else None
