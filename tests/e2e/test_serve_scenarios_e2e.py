"""Scenario files against a real kube-apiserver, scheduled by ``drasched serve``'s loop.

Each scenario runs on a fresh API server (unschedulable messages count the cluster's
nodes, and Nodes, DeviceClasses, slices and Queues are cluster-scoped, so nothing may
leak from one scenario into the next). Its objects are created as a user would create
them, then the serve loop (``drasched.serve.main.run``: shared informers, one thread per
controller, the claim controller enabled) runs until the cluster stops changing, and the
objects read back from the server must meet the scenario's ``expect`` block, checked by
the same ``check_expectations`` as embedded mode.

What a real API server changes in the input, and how the test follows it:

* ``metadata.uid`` is assigned by the server: every uid the scenario names (owner
  references, ``reservedFor``, a BindRequest's ``podUID``) is replaced by the server's
  uid of that object, in later objects and in the expectations alike.
* ``status`` is dropped on create: it is written afterwards through the status
  subresource.
* ``creationTimestamp`` is the server's, in whole seconds. The scheduler orders by it
  ("oldest first", ties by name), so objects that give one are created in its order, and
  the loader waits for the next second whenever two objects created in the same second
  would compare the other way round (a PodGroup stamped after its pods, ``extra`` after
  ``small``). An object that names another's uid is created after it.
* No kubelet and no kube-controller-manager run: Nodes are marked Ready with their
  ``node.kubernetes.io/not-ready`` taint cleared, each namespace gets its ``default``
  ServiceAccount, and every pod that is not bound already asks for ``schedulerName:
  drasched`` (serve schedules only those; embedded schedules every pod).
* The filter on expectations: a pod expected ``phase: Running`` is expected bound (it
  would run once a kubelet started it; nothing here runs pods, so ``phase`` stays
  ``Pending``); a BindRequest expected ``Succeeded`` is expected with its pod bound
  (serve writes no BindRequest status for a bind that succeeds). Other expectations are
  checked as written, so scenarios whose outcome needs a kubelet (pods finishing, devices
  prepared) are not in the list below.
* Claims from templates are created before the scheduler starts (the claim controller
  runs alone until it settles), as in embedded mode, where the claim controller runs
  first in every round: otherwise the first cycles would see only some of the claims,
  and a scenario about contention could end differently from embedded for a reason
  that has nothing to do with the store.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import NotFound
from drasched.serve.main import IDLE_CYCLE_PERIOD, build_controllers, run
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace
from tests.scenarios.runner import Scenario, check_expectations, load_scenario

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
CASES = [
    "claims/001-template-claims-three-containers.yaml",  # claims from templates, owner refs, pod status
    "scheduler/011-shared-claims.yaml",  # a claim shared by pods, a PodGroup's claim for one consumer
    "scheduler/001-fair-share-three-levels.yaml",  # queue status at three levels, limits in messages
    "scheduler/002-quota-on-device-class.yaml",  # quota on a DRA device class, claims from templates
    "scheduler/004-gang-all-or-nothing.yaml",  # gangs: all or nothing, events on PodGroups
    "scheduler/006-topology-required.yaml",  # topology: required domain
    "dra/004-exact-count-more-than-available.yaml",  # an unschedulable message from the allocator
    "binder/claim-allocated-elsewhere-rolls-back.yaml",  # binder conflict and rollback
    "binder/bind-claims-and-extended-resources.yaml",  # extended-resource claim written by the binder
    "binder/binding-conditions-hold-the-pod.yaml",  # KEP-5007: the pod waits for its device, another binds
]
QUIET_SECONDS = IDLE_CYCLE_PERIOD + 1.0
"""The cluster counts as settled once nothing in it changed for this long: longer than the
scheduler's idle period, after which it refreshes queue statuses once more."""
SETTLE_TIMEOUT = 90.0
WATCHED_FOR_QUIET = (kinds.POD, kinds.RESOURCE_CLAIM, kinds.BIND_REQUEST, kinds.QUEUE, kinds.POD_GROUP, kinds.EVENT)
DROPPED_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    """A fresh API server per scenario (see the module docstring for why not a shared one)."""
    with LocalCluster() as c:
        yield c


# -------------------------------------------------------------------------------- loading


def _replace_uids(value: Any, uids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return uids.get(value, value)
    if isinstance(value, list):
        return [_replace_uids(v, uids) for v in value]
    if isinstance(value, dict):
        return {k: _replace_uids(v, uids) for k, v in value.items()}
    return value


def _ready_node_status(status: Obj) -> Obj:
    """The scenario's node status, plus ``Ready=True`` (no kubelet reports it here)."""
    status = copy.deepcopy(status)
    conds = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    status["conditions"] = [*conds, {"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "message": "no kubelet in this test: marked ready"}]
    return status


def _uid_refs(obj: Obj, scenario_uids: set[str]) -> set[str]:
    """Scenario uids that ``obj`` names outside its own uid and its status."""
    found: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str) and value in scenario_uids:
            found.add(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk({k: v for k, v in obj.items() if k != "status"})
    found.discard((obj.get("metadata") or {}).get("uid"))
    return found


def _creation_order(manifests: list[Obj]) -> list[Obj]:
    """Untimestamped objects first in dependency order, then the others oldest first; an
    object naming another's uid comes after it."""
    scenario_uids = {u for o in manifests if (u := (o.get("metadata") or {}).get("uid"))}
    ranked = sorted(enumerate(manifests), key=lambda t: (
        str((t[1].get("metadata") or {}).get("creationTimestamp") or ""),
        kinds.order_index(kinds.for_object(t[1])), t[0]))
    pending = [o for _, o in ranked]
    ordered: list[Obj] = []
    created: set[str] = set()
    while pending:
        ready = next((o for o in pending if _uid_refs(o, scenario_uids) <= created), pending[0])
        pending.remove(ready)
        ordered.append(ready)
        if uid := (ready.get("metadata") or {}).get("uid"):
            created.add(uid)
    return ordered


class _Stamps:
    """Keeps the server's creation order as the scenario's timestamps give it."""

    def __init__(self) -> None:
        self.second = ""
        self.same_second: list[tuple[str, str, str]] = []  # (given timestamp, kind, namespace/name)

    def before_create(self, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        given = str(md.get("creationTimestamp") or "")
        if not given:
            return
        key = f"{md.get('namespace', '')}/{md.get('name', '')}"
        if any(g < given and (k != obj["kind"] or n >= key) for g, k, n in self.same_second):
            time.sleep(max(0.0, math.floor(time.time()) + 1.05 - time.time()))
            self.same_second, self.second = [], ""

    def after_create(self, original: Obj, created: Obj) -> None:
        md = original.get("metadata") or {}
        second = str(created["metadata"].get("creationTimestamp"))
        if second != self.second:
            self.second, self.same_second = second, []
        if md.get("creationTimestamp"):
            self.same_second.append((str(md["creationTimestamp"]), original["kind"],
                                     f"{md.get('namespace', '')}/{md.get('name', '')}"))


def load(store: KubeStore, scn: Scenario) -> dict[str, str]:
    """Create the scenario's objects as a user would; returns scenario uid -> server uid."""
    uids: dict[str, str] = {}
    namespaces = {(o.get("metadata") or {}).get("namespace") for o in scn.manifests} - {None, ""}
    for o in scn.manifests:
        if o["kind"] == "Namespace":
            namespaces.add(o["metadata"]["name"])
    for ns in sorted({"default", *namespaces}):
        ensure_namespace(store, str(ns))
    statuses: list[tuple[Obj, Obj]] = []
    stamps = _Stamps()
    for original in _creation_order(scn.manifests):
        if original["kind"] == "Namespace":
            continue
        obj = _replace_uids(copy.deepcopy(original), uids)
        md = obj.setdefault("metadata", {})
        given_uid = md.get("uid")
        for key in DROPPED_METADATA:
            md.pop(key, None)
        status = obj.pop("status", None)
        if obj["kind"] == "Pod" and not (obj.get("spec") or {}).get("nodeName"):
            obj["spec"]["schedulerName"] = "drasched"
        stamps.before_create(original)
        created = store.create(obj)
        stamps.after_create(original, created)
        if given_uid:
            uids[given_uid] = created["metadata"]["uid"]
        if obj["kind"] == "Node":
            # TaintNodesByCondition put the not-ready taint on it; with no kubelet nobody lifts it.
            taints = [t for t in (created.get("spec") or {}).get("taints") or []
                      if not str(t.get("key", "")).startswith("node.kubernetes.io/")]
            created.setdefault("spec", {})["taints"] = taints
            created = store.update(created)
            status = _ready_node_status(status or {})
        if status:
            statuses.append((created, status))
    for created, status in statuses:  # after every object exists: statuses may name any uid
        current = store.get(kinds.for_object(created), created["metadata"]["name"],
                            created["metadata"].get("namespace"))
        current["status"] = _replace_uids(status, uids)
        store.update_status(current)
    return uids


# -------------------------------------------------------------------------------- running


def _fingerprint(store: KubeStore) -> tuple[Any, ...]:
    parts: list[Any] = []
    for rt in WATCHED_FOR_QUIET:
        items = store.list(rt).items
        parts.append(sorted((o["metadata"].get("namespace", ""), o["metadata"]["name"],
                             o["metadata"].get("resourceVersion")) for o in items))
    return tuple(map(tuple, parts))


def wait_quiet(store: KubeStore, quiet: float = QUIET_SECONDS, timeout: float = SETTLE_TIMEOUT) -> None:
    """Until nothing the controllers write changes for ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    last, since = _fingerprint(store), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = _fingerprint(store)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise AssertionError(f"the cluster kept changing for {timeout} s")


class Serving:
    """``run`` in a thread, as ``drasched serve`` runs it, until ``stop``."""

    def __init__(self, cluster: LocalCluster | None, claims_only: bool = False, store: KubeStore | None = None,
                 without: tuple[str, ...] = (), controllers: list[Any] | None = None) -> None:
        """``store``: the identity serve runs as (default: the cluster's admin); ``without``: the
        names of controllers left out; ``controllers``: these instead of the command's."""
        if controllers is None:
            controllers = build_controllers(enable_claim_controller=True)
        controllers = [c for c in controllers if c.name not in without]
        if claims_only:
            controllers = [c for c in controllers if c.name in ("resourceclaim-controller", "resourceclaim-cleanup")]
        self.stop = threading.Event()
        self.error: BaseException | None = None
        if store is None:
            assert cluster is not None, "a cluster or a store"
            store = cluster.store()
        self.store = store
        self.thread = threading.Thread(target=self._run, args=(controllers,), daemon=True)

    def _run(self, controllers: list[Any]) -> None:
        try:
            run(self.store, controllers, stop=self.stop, period=0.05, watch_timeout=5.0)
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc

    def __enter__(self) -> Serving:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the serve loop did not stop"


def read_back(store: KubeStore) -> dict[str, Obj]:
    """Every object of the kinds drasched knows, keyed as the scenario runner keys them."""
    objects: dict[str, Obj] = {}
    for rt in kinds.ALL:
        if rt in (kinds.LEASE,):
            continue
        try:
            items = store.list(rt).items
        except NotFound:  # a kind this server does not serve (JobSet, LeaderWorkerSet: CRDs not installed)
            continue
        for o in items:
            md = o["metadata"]
            ns = md.get("namespace")
            objects[f"{o['kind']}:{ns + '/' if ns else ''}{md['name']}"] = o
    return objects


def expectations_without_kubelet(scn: Scenario, uids: dict[str, str]) -> tuple[Scenario, list[str]]:
    """The scenario's expectations in server uids, with ``phase: Running`` read as "bound"."""
    expect = _replace_uids(copy.deepcopy(scn.expect), uids)
    bound: list[str] = []
    for key, want in (expect.get("pods") or {}).items():
        if want.get("phase") == "Running":
            del want["phase"]
            bound.append(key)
    for key, want in (expect.get("objects") or {}).items():  # serve writes no status for a bind that succeeds
        fields = want.get("fields") or {}
        if key.startswith("BindRequest:") and fields.get("status.phase") == "Succeeded":
            for f in ("status.phase", "status.reason", "status.message"):
                fields.pop(f, None)
            bound.append(key.split(":", 1)[1])  # the pod's binding is the record
    return Scenario(scn.path, scn.description, expect, scn.manifests, scn.exit_code), bound


def settle_under_serve(cluster: LocalCluster, store: KubeStore | None = None) -> None:
    """The claim controller alone until quiet, then the whole serve loop until quiet, as
    ``store``'s identity (default: the admin); a controller error fails the test."""
    admin = cluster.store()
    with Serving(cluster, claims_only=True, store=store) as claims:
        wait_quiet(admin)
    assert claims.error is None, claims.error
    with Serving(cluster, store=store) as serving:
        wait_quiet(admin)
    assert serving.error is None, serving.error


def scenario_problems(scn: Scenario, uids: dict[str, str], objects: dict[str, Obj]) -> list[str]:
    """What the objects read back miss of the scenario's expectations (``Running`` read as bound)."""
    filtered, bound = expectations_without_kubelet(scn, uids)
    problems = check_expectations(filtered, objects)
    for key in bound:
        pod = objects.get(f"Pod:{key}")
        if pod is not None and not (pod.get("spec") or {}).get("nodeName"):
            problems.append(f"pod {key}: expected bound (Running once a kubelet starts it), not bound")
    return problems


# -------------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("case", CASES)
def test_scenario_against_a_real_api_server(case: str, cluster: LocalCluster) -> None:
    scn = load_scenario(SCENARIOS / case)
    assert scn.exit_code == 0, "only scenarios that load cleanly run here"
    store = cluster.store()
    uids = load(store, scn)
    settle_under_serve(cluster)
    problems = scenario_problems(scn, uids, read_back(store))
    assert not problems, f"{case}: {scn.description}\n" + "\n".join(problems)
