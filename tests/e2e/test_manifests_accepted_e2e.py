"""Every object of every scenario and example is one a real kube-apiserver accepts.

Each file under ``tests/scenarios/`` and ``examples/`` (manifests only: a scenario's
``Scenario`` document is the test's, not the cluster's) is applied to one API server of
its own, with ``fieldValidation=Strict``: objects are created in dependency order, then the
``status`` a file gives is written through the status subresource, as a restore would.
Nothing is skipped: every refusal of every object is reported.

Files are kept apart without a server each: every namespace a file names is renamed to one
of that file's own, and its cluster-scoped objects (Nodes, DeviceClasses, slices,
PriorityClasses, Queues) are deleted before the next file. Admission plugins read
PriorityClasses from an informer, so a create they refuse (403) is retried until the
informer has caught up with the file's own classes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from drasched.api import kinds
from drasched.api.errors import ApiError, Forbidden, NotFound
from drasched.api.manifest import MANIFEST_SUFFIXES, parse_documents
from drasched.store.kube import KubeStore
from drasched.testing.apiserver import LocalCluster, ensure_namespace
from drasched.testing.served import ServedApis, as_served, is_gang
from tests.scenarios.runner import load_scenario

pytestmark = pytest.mark.e2e
Obj = dict[str, Any]

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "tests" / "scenarios").rglob("*.yaml"))
EXAMPLES = sorted(p for p in (REPO / "examples").rglob("*") if p.suffix in MANIFEST_SUFFIXES)
FILES = SCENARIOS + EXAMPLES
ADMISSION_RETRIES = 100
"""Forbidden answers retried (0.05 s apart) while the admission informer catches up."""


def manifests(path: Path) -> list[Obj]:
    if path.is_relative_to(REPO / "tests" / "scenarios"):
        return load_scenario(path).manifests
    return [item.obj for item in parse_documents(path.read_text(encoding="utf-8"), str(path))]


def expected_refusals(path: Path) -> tuple[str, ...]:
    """What simulate refuses in a scenario that expects a refusal (exit 2): the API server must too."""
    if not path.is_relative_to(REPO / "tests" / "scenarios"):
        return ()
    scn = load_scenario(path)
    return scn.stderr_contains if scn.exit_code else ()


UNKNOWN_FIELD = re.compile(r'unknown field "[^"]+"')


def server_words(fragment: str, unserved: list[str]) -> str | None:
    """What the server's refusals must contain for one of simulate's expected stderr lines: the
    line itself, as drasched words refusals as the server does; None for a warning (no refusal)
    and for an object of a kind the server does not serve (its 404 is checked instead); for a
    field drasched ignores with a warning, which a strict server refuses, the server's
    ``unknown field "<path>"``."""
    if fragment.startswith("warning:") or any(fragment.startswith(f"{name}:") for name in unserved):
        return None
    unknown = UNKNOWN_FIELD.search(fragment)
    if unknown is not None and "(ignored" in fragment:
        return unknown.group(0)
    return fragment


def unserved_kind(obj: Obj, served: ServedApis) -> bool:
    """Whether ``obj``'s kind is one no test server serves (another scheduler's old version, a gang
    API version Kubernetes dropped): simulate refuses it, and the server has no endpoint for it."""
    try:
        resource_type(obj, served)
    except ApiError:
        return True
    return False


def gang_kind(kind: str, served: ServedApis) -> kinds.ResourceType:
    """The upstream gang API's kinds in the version the test server serves (drasched reads them
    through its translation to its own PodGroup, so they are not in its kinds registry)."""
    version = served.gang.rpartition("/")[2]
    if kind == "Workload":
        return kinds.ResourceType("scheduling.k8s.io", version, "Workload", "workloads", True, has_status=False)
    return kinds.ResourceType("scheduling.k8s.io", version, "PodGroup", "podgroups", True)


KAI_TOPOLOGY = kinds.ResourceType("kai.scheduler", "v1", "Topology", "topologies", False, has_status=False)
CRD_KINDS = {(rt.api_version, rt.kind): rt
             for rt in (kinds.KAI_QUEUE, kinds.KAI_POD_GROUP, KAI_TOPOLOGY, kinds.COSCHEDULING_POD_GROUP)}
"""KAI-Scheduler's and scheduler-plugins' kinds, which simulate translates: served here by stand-ins
(their CRDs are not vendored)."""
CRD_ORDER = {kinds.KAI_QUEUE: kinds.QUEUE, kinds.KAI_POD_GROUP: kinds.POD_GROUP, KAI_TOPOLOGY: kinds.NODE,
             kinds.COSCHEDULING_POD_GROUP: kinds.POD_GROUP}


def resource_type(obj: Obj, served: ServedApis) -> kinds.ResourceType:
    if is_gang(obj):
        return gang_kind(obj["kind"], served)
    crd = CRD_KINDS.get((obj.get("apiVersion"), obj.get("kind")))
    return crd if crd is not None else kinds.for_object(obj)


def order(obj: Obj, served: ServedApis) -> int:
    """Dependency order; the upstream gang objects go just before the pods that join them, KAI's and
    scheduler-plugins' objects where drasched's translations of them go."""
    if is_gang(obj):
        return kinds.order_index(kinds.POD)
    rt = resource_type(obj, served)
    return kinds.order_index(CRD_ORDER.get(rt, rt))


def file_namespace(index: int, name: str) -> str:
    return f"f{index}-{name}"[:63].rstrip("-")


def isolated(objs: list[Obj], index: int, served: ServedApis) -> list[Obj]:
    """The file's objects with every namespace renamed to one of the file's own, each kind
    written in the version the test server serves (1.37 objects on a 1.36 server, and back)."""
    out = []
    for obj in objs:
        obj = as_served({**obj, "metadata": dict(obj.get("metadata") or {})}, served)
        rt = resource_type(obj, served)
        if rt is kinds.NAMESPACE:
            obj["metadata"]["name"] = file_namespace(index, obj["metadata"]["name"])
        elif rt.namespaced:
            obj["metadata"]["namespace"] = file_namespace(index, obj["metadata"].get("namespace") or "default")
        out.append(obj)
    return sorted(out, key=lambda o: (order(o, served), o["kind"] == "Pod"))


def _create(store: KubeStore, body: Obj, served: ServedApis) -> Obj:
    if body.get("kind") == kinds.JOB_SET.kind and body.get("apiVersion") in kinds.JOB_SET_ALSO_SERVED:
        rt = dataclasses.replace(kinds.JOB_SET, version=str(body["apiVersion"]).rpartition("/")[2])
        return store.request("POST", rt.api_path(body["metadata"].get("namespace")), body)
    if is_gang(body) or (body.get("apiVersion"), body.get("kind")) in CRD_KINDS:
        rt = resource_type(body, served)
        return store.request("POST", rt.api_path(body["metadata"].get("namespace")), body,
                             params={"fieldValidation": "Strict"})
    return store.create(body)


def create_admitted(store: KubeStore, body: Obj, served: ServedApis) -> Obj:
    """Create ``body``, retried while an admission plugin's informer lags behind the file's classes."""
    for _ in range(ADMISSION_RETRIES):
        try:
            return _create(store, body, served)
        except Forbidden:
            time.sleep(0.05)
    return _create(store, body, served)


def describe(obj: Obj) -> str:
    md = obj["metadata"]
    return f"{obj['kind']} {md['namespace'] + '/' if md.get('namespace') else ''}{md.get('name')}"


def apply(store: KubeStore, objs: list[Obj], served: ServedApis) -> list[str]:
    """Create every object (then its status); the refusals, each naming its object."""
    refusals: list[str] = []
    for obj in objs:
        rt = resource_type(obj, served)
        if rt is not kinds.NAMESPACE and rt.namespaced:
            ensure_namespace(store, obj["metadata"]["namespace"])
        body = {k: v for k, v in obj.items() if k != "status"}
        try:
            created = create_admitted(store, body, served)
            if rt is kinds.NAMESPACE:
                ensure_namespace(store, obj["metadata"]["name"])
            if obj.get("status") and rt.has_status:
                store.update_status({**created, "status": obj["status"]})
        except ApiError as exc:
            refusals.append(f"{describe(obj)}: {exc.message}")
    return refusals


def remove_cluster_scoped(store: KubeStore, objs: list[Obj], served: ServedApis) -> None:
    for obj in objs:
        rt = resource_type(obj, served)
        if not rt.namespaced and rt is not kinds.NAMESPACE:
            with contextlib.suppress(NotFound):
                store.delete(rt, obj["metadata"]["name"], grace_period_seconds=0)


def stand_in_crd(rt: kinds.ResourceType) -> Obj:
    """A CRD for another project's kind that takes any spec (its schema is not vendored here)."""
    version: Obj = {"name": rt.version, "served": True, "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    if rt.has_status:
        version["subresources"] = {"status": {}}
    versions = [version]
    if rt is kinds.JOB_SET:  # the JobSet CRD serves v1 beside v1alpha2 (kinds.JOB_SET_ALSO_SERVED)
        versions += [{**version, "name": v.rpartition("/")[2], "storage": False} for v in kinds.JOB_SET_ALSO_SERVED]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": rt.group_resource},
            "spec": {"group": rt.group, "scope": "Namespaced" if rt.namespaced else "Cluster",
                     "names": {"plural": rt.plural, "singular": rt.kind.lower(), "kind": rt.kind,
                               "listKind": f"{rt.kind}List"},
                     "versions": versions}}


THIRD_PARTY = [rt for rt in kinds.ALL if rt.group.endswith(".x-k8s.io")] + list(CRD_KINDS.values())
"""Kinds of other projects' CRDs (JobSet, LeaderWorkerSet, KAI-Scheduler's, scheduler-plugins'): served here by
stand-ins, so only their metadata and namespace are checked, not their spec."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """An API server of this module's own: the files' fixed names stay out of other tests' way.
    It serves drasched's CRDs (deploy/crds) and the stand-ins of ``THIRD_PARTY``."""
    crd_dir = tmp_path_factory.mktemp("crds")
    for path in (REPO / "deploy" / "crds").glob("*.yaml"):
        shutil.copy(path, crd_dir / path.name)
    (crd_dir / "stand-ins.yaml").write_text(yaml.safe_dump_all([stand_in_crd(rt) for rt in THIRD_PARTY]))
    with LocalCluster(crd_dir=crd_dir) as c:
        yield c


@pytest.fixture(scope="module")
def store(cluster: LocalCluster) -> KubeStore:
    return cluster.store()


def test_every_scenario_and_example_file_is_in_the_list() -> None:
    assert len(SCENARIOS) > 200
    assert {p.parent.name for p in EXAMPLES} >= {"quickstart", "migration", "fewest-free-gpus"}


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_the_api_server_accepts_every_object_of_the_file(cluster: LocalCluster, store: KubeStore,
                                                         path: Path) -> None:
    """...or refuses exactly what simulate refuses, where the scenario expects a refusal."""
    index = FILES.index(path)
    given = manifests(path)
    missing = [o for o in given if unserved_kind(o, cluster.served)]
    for obj in missing:  # the server refuses it too: it serves no such group version
        with pytest.raises(NotFound):
            store.request("GET", f"/apis/{obj['apiVersion']}")
    objs = isolated([o for o in given if o not in missing], index, cluster.served)
    assert objs, f"{path}: no objects"
    try:
        refusals = apply(store, objs, cluster.served)
    finally:
        remove_cluster_scoped(store, objs, cluster.served)
    names = [describe(o) for o in missing] + [describe({**o, "metadata": {**o["metadata"], "namespace": "default"}})
                                               for o in missing if not o["metadata"].get("namespace")]
    expected = tuple(w for f in expected_refusals(path) if (w := server_words(f, names)) is not None)
    if not expected:
        assert not refusals, "\n".join(refusals)
        return
    # in the server's words, with the file's namespaces named as the file names them
    said = "\n".join(refusals)
    for obj in manifests(path):
        ns = (obj.get("metadata") or {}).get("namespace") or "default"
        said = said.replace(f"{file_namespace(index, ns)}/", f"{ns}/")
    assert refusals and all(fragment in said for fragment in expected), (expected, said)


def test_a_refused_object_is_reported_not_skipped(cluster: LocalCluster, store: KubeStore) -> None:
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "main", "image": "x"}], "priority": 100}}
    refusals = apply(store, isolated([bad], len(FILES), cluster.served), cluster.served)
    assert len(refusals) == 1 and "must not be provided in pod spec" in refusals[0], refusals
