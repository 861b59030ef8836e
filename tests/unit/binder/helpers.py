"""A small cluster in a MemoryStore, BindRequests as the scheduler writes them, and a store
that crashes or fails on the n-th write (to prove every binder step is safe to repeat)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.binder import Backoff, Binder
from drasched.binder.claims import EXTENDED_CLAIM_ANNOTATION
from drasched.sim.clock import VirtualClock
from drasched.store.memory import MemoryStore

Obj = dict[str, Any]
NS = "default"
DRIVER = "gpu.example.com"
GROUP_API = "scheduling.drasched.io"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def allocation(node: str, *devices: str, request: str = "gpu") -> Obj:
    """An AllocationResult as the allocator writes it: devices of the node's pool, node pinned."""
    return {
        "devices": {"results": [{"request": request, "driver": DRIVER, "pool": node, "device": d}
                                for d in devices]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
    }


def make_store() -> tuple[MemoryStore, VirtualClock]:
    clock = VirtualClock(T0)
    store = MemoryStore(clock=clock.now)
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    for node in ("n1", "n2"):
        store.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    store.create({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                  "spec": {}})
    return store, clock


def add_pod(store: MemoryStore, name: str, *, claims: list[str] = (), group: str | None = None,  # type: ignore[assignment]
            gpus: int = 0) -> Obj:
    container: Obj = {"name": "main", "image": "busybox"}
    if gpus:
        container["resources"] = {"requests": {"nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}
    if claims:
        container.setdefault("resources", {})["claims"] = [{"name": c} for c in claims]
    md: Obj = {"name": name, "namespace": NS}
    if group:
        md["labels"] = {"drasched.io/pod-group": group}
    return store.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": md,
        "spec": {"schedulerName": "drasched", "containers": [container],
                 "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims]},
    })


def add_claim(store: MemoryStore, name: str, count: int = 1) -> Obj:
    return store.create({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": count}}]}},
    })


def add_group(store: MemoryStore, name: str) -> Obj:
    return store.create({"apiVersion": f"{GROUP_API}/v1alpha1", "kind": "PodGroup",
                         "metadata": {"name": name, "namespace": NS}, "spec": {"minMember": 2}})


def group_ref(group: Obj) -> Obj:
    return {"apiGroup": GROUP_API, "resource": "podgroups", "name": group["metadata"]["name"],
            "uid": group["metadata"]["uid"]}


def ext_spec(node: str = "n1", device: str = "gpu-0") -> Obj:
    """The scheduler's ``extendedResourceClaimAllocation`` for ``nvidia.com/gpu: 1``."""
    return {
        "allocation": allocation(node, device, request="container-0-request-0"),
        "deviceRequests": [{"name": "container-0-request-0",
                            "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}],
        "containerMappings": [{"containerName": "main", "resourceName": "nvidia.com/gpu",
                               "requestName": "container-0-request-0"}],
    }


def add_bind_request(store: Any, pod: Obj, node: str, claims: list[Obj] = (),  # type: ignore[assignment]
                     extended: Obj | None = None) -> Obj:
    """``claims``: ``{name, uid?, allocation?, reservedFor?}`` entries, as the scheduler writes them."""
    spec: Obj = {"podName": pod["metadata"]["name"], "podUID": pod["metadata"]["uid"], "selectedNode": node}
    if claims:
        spec["resourceClaimAllocations"] = list(claims)
    if extended:
        spec["extendedResourceClaimAllocation"] = extended
    return store.create({"apiVersion": f"{GROUP_API}/v1alpha1", "kind": "BindRequest",
                         "metadata": {"name": pod["metadata"]["name"], "namespace": pod["metadata"]["namespace"]},
                         "spec": spec})


def claim_entry(claim: Obj, alloc: Obj | None, reserved_for: Obj | None = None) -> Obj:
    entry: Obj = {"name": claim["metadata"]["name"], "uid": claim["metadata"]["uid"]}
    if alloc is not None:
        entry["allocation"] = alloc
    if reserved_for is not None:
        entry["reservedFor"] = reserved_for
    return entry


@dataclass
class Recorder:
    """Collects the events and decisions a binder emits."""

    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    decisions: list[tuple[str, str]] = field(default_factory=list)

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"]["name"], event_type, reason, message))

    def decide(self, controller: str, action: str, obj: Obj | str, message: str) -> None:
        self.decisions.append((action, message))


def make_binder(store: Any, rec: Recorder | None = None, **kw: Any) -> Binder:
    rec = rec or Recorder()
    kw.setdefault("backoff", Backoff(1.0, 2.0, 60.0))
    return Binder(store, recorder=rec, decisions=rec, **kw)


def get_br(store: Any, name: str) -> Obj:
    return store.get(kinds.BIND_REQUEST, name, NS)


def run_to_end(binder: Binder, store: Any, name: str, clock: VirtualClock, limit: int = 50) -> Obj:
    """Process one BindRequest until it is Succeeded or Failed, advancing time over backoff
    (a binder with ``record_success`` off says Succeeded without writing it)."""
    for _ in range(limit):
        br = get_br(store, name)
        if (br.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return br
        out = binder.process(br, clock.now())
        if out is not None and out.phase == "Succeeded" and not binder.record_success:
            return get_br(store, name)
        if out is not None and out.retry_at is not None:
            clock.advance_to(out.retry_at)
    raise AssertionError(f"BindRequest {name} did not finish: {get_br(store, name).get('status')}")


def ext_claims(store: MemoryStore, pod: str) -> list[Obj]:
    return [c for c in store.list(kinds.RESOURCE_CLAIM, NS).items
            if (c["metadata"].get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION) == "true"
            and any(r.get("name") == pod for r in c["metadata"].get("ownerReferences") or [])]


def snapshot(store: MemoryStore) -> Obj:
    """The state a bind outcome is judged by, free of names and versions that differ run to run."""
    out: Obj = {"pods": {}, "claims": {}, "ext": {}, "brs": {}}
    for p in store.list(kinds.POD, NS).items:
        ercs = (p.get("status") or {}).get("extendedResourceClaimStatus")
        if ercs is not None:  # the generated suffix differs from run to run
            ercs = {**ercs, "resourceClaimName": ercs["resourceClaimName"].rsplit("-", 1)[0]}
        out["pods"][p["metadata"]["name"]] = {"node": p["spec"].get("nodeName"), "ercs": ercs}
    for c in store.list(kinds.RESOURCE_CLAIM, NS).items:
        md, st = c["metadata"], c.get("status") or {}
        state = {"alloc": st.get("allocation"), "reservedFor": [r["name"] for r in st.get("reservedFor") or []],
                 "finalizers": md.get("finalizers"), "deleting": bool(md.get("deletionTimestamp"))}
        if (md.get("annotations") or {}).get(EXTENDED_CLAIM_ANNOTATION):
            out["ext"].setdefault(md["generateName"], []).append(state)
        else:
            out["claims"][md["name"]] = state
    for b in store.list(kinds.BIND_REQUEST, NS).items:
        st = b.get("status") or {}
        out["brs"][b["metadata"]["name"]] = (st.get("phase"), st.get("reason"))
    return out


class Crash(BaseException):
    """The binder process dies (BaseException: no ``except Exception`` in the binder catches it)."""


WRITES = ("create", "update", "update_status", "patch", "delete", "bind")


class FaultyStore:
    """Wraps a store and counts its writes. Write number ``at`` (counting only ``only``
    writes when given) crashes before it lands, or after with ``after``, or raises
    ``error()``. ``hook(method, args)`` runs before every write, to inject races."""

    def __init__(self, inner: Any, *, at: int | None = None, after: bool = False,
                 error: Callable[[], BaseException] | None = None, only: str | None = None,
                 hook: Callable[[str, tuple[Any, ...]], None] | None = None) -> None:
        self.inner, self.at, self.after, self.only, self.hook = inner, at, after, only, hook
        self.error = error or Crash
        self.writes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if name not in WRITES:
            return target

        def write(*args: Any, **kw: Any) -> Any:
            if self.hook is not None:
                self.hook(name, copy.deepcopy(args))
            n = len(self.writes) if self.only is None else sum(w.startswith(f"{name}:") for w in self.writes)
            self.writes.append(f"{name}:{_what(name, args)}")
            hit = self.at is not None and n == self.at and self.only in (None, name)
            if hit and not self.after:
                raise self.error()
            result = target(*args, **kw)
            if hit:
                raise self.error()
            return result

        return write


def _what(name: str, args: tuple[Any, ...]) -> str:
    if name in ("create", "update", "update_status"):
        return f"{args[0].get('kind')}/{args[0]['metadata'].get('name') or args[0]['metadata'].get('generateName')}"
    if name == "bind":
        return f"Pod/{args[1]}"
    return f"{args[0].kind}/{args[1]}"


def api_error(code: int = 500, reason: str = "InternalError") -> Callable[[], ApiError]:
    return lambda: ApiError("etcdserver: request timed out", code, reason)
