"""Other schedulers' objects schedule exactly as their drasched equivalents.

Each test takes a scenario written in drasched's own API, rewrites it by hand into the other
API (KAI-Scheduler's CRDs and labels, scheduler-plugins' coscheduling PodGroup, or the upstream
scheduling.k8s.io gang API), runs both through ``drasched simulate`` and compares where every pod
ended up. The rewrite here is independent of drasched.api.foreign (it goes the other way), so a
wrong translation shows.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from tests.scenarios.runner import Scenario, check_expectations, load_scenario, run_scenario

Obj = dict[str, Any]
HERE = Path(__file__).parent


def _placements(objects: dict[str, Obj]) -> dict[str, tuple[str | None, str | None]]:
    """Pod -> (node, phase); a pod evicted and deleted is (None, None)."""
    return {k: ((o.get("spec") or {}).get("nodeName"), (o.get("status") or {}).get("phase"))
            for k, o in objects.items() if k.startswith("Pod:")}


def _run(path: Path, manifests: list[Obj], tmp: Path, name: str) -> tuple[dict[str, Obj], str]:
    sub = tmp / name
    sub.mkdir()
    code, objects, stderr = run_scenario(Scenario(path.with_stem(name), "", {}, manifests), sub)
    assert code == 0, stderr
    return objects, stderr


# ---- KAI-Scheduler -------------------------------------------------------------------------


def _kai_queue(q: Obj) -> Obj:
    """A drasched Queue written as KAI's scheduling.run.ai/v2 Queue (GPUs: same unit). KAI reads an
    unset limit, and a resource left out, as a limit of 0, so what drasched leaves unlimited is
    written -1 (as KAI's quickstart queues do)."""
    spec = q.get("spec") or {}
    resources: Obj = {"gpu": {"limit": -1}, "cpu": {"limit": -1}, "memory": {"limit": -1}}
    for name, r in (spec.get("resources") or {}).items():
        assert name == "nvidia.com/gpu", name
        resources["gpu"] = {"limit": -1, **{k: (float(v) if k != "overQuotaWeight" else v) for k, v in r.items()}}
    out_spec: Obj = {"resources": resources}
    if spec.get("parentQueue"):
        out_spec["parentQueue"] = spec["parentQueue"]
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": copy.deepcopy(q["metadata"]),
            "spec": out_spec}


def _kai_pod(p: Obj) -> Obj:
    p = copy.deepcopy(p)
    labels = p["metadata"].get("labels") or {}
    if "drasched.io/queue" in labels:
        labels["kai.scheduler/queue"] = labels.pop("drasched.io/queue")
    return p


def test_kai_queue_tree_schedules_as_its_drasched_translation(tmp_path: Path) -> None:
    path = HERE / "scheduler" / "001-fair-share-three-levels.yaml"
    scn = load_scenario(path)
    kai = [_kai_queue(o) if o.get("kind") == "Queue" else _kai_pod(o) if o.get("kind") == "Pod" else o
           for o in scn.manifests]
    assert any(o.get("apiVersion") == "scheduling.run.ai/v2" for o in kai)
    assert not any("drasched.io/queue" in (o.get("metadata", {}).get("labels") or {}) for o in kai)
    ours, _ = _run(path, scn.manifests, tmp_path, "drasched")
    theirs, stderr = _run(path, kai, tmp_path, "kai")
    assert _placements(theirs) == _placements(ours), stderr
    # and the KAI run meets the original scenario's expectations (a real mix of placed and pending)
    assert check_expectations(scn, theirs) == []
    assert "warning:" not in stderr


def test_kai_pod_group_schedules_as_drasched(tmp_path: Path) -> None:
    path = HERE / "scheduler" / "004-gang-all-or-nothing.yaml"
    scn = load_scenario(path)

    def kai(o: Obj) -> Obj:
        o = copy.deepcopy(o)
        if o.get("kind") == "PodGroup":
            o["apiVersion"] = "scheduling.run.ai/v2alpha2"
        if o.get("kind") == "Pod":
            labels = o["metadata"]["labels"]
            o["metadata"].setdefault("annotations", {})["pod-group-name"] = labels.pop("drasched.io/pod-group")
        return o

    theirs, stderr = _run(path, [kai(o) for o in scn.manifests], tmp_path, "kai")
    ours, _ = _run(path, scn.manifests, tmp_path, "drasched")
    assert _placements(theirs) == _placements(ours), stderr
    assert check_expectations(scn, theirs) == []


def test_kai_gpu_fraction_annotation_schedules_as_drasched(tmp_path: Path) -> None:
    path = HERE / "extended" / "011-fractional-gpu-shares.yaml"
    scn = load_scenario(path)

    def kai(o: Obj) -> Obj:
        o = copy.deepcopy(o)
        annotations = (o.get("metadata") or {}).get("annotations") or {}
        if "drasched.io/gpu-fraction" in annotations:
            annotations["gpu-fraction"] = annotations.pop("drasched.io/gpu-fraction")
        return o

    kai_manifests = [kai(o) for o in scn.manifests]
    assert sum("gpu-fraction" in (o.get("metadata", {}).get("annotations") or {}) for o in kai_manifests) >= 4
    theirs, stderr = _run(path, kai_manifests, tmp_path, "kai")
    ours, _ = _run(path, scn.manifests, tmp_path, "drasched")
    assert _placements(theirs) == _placements(ours), stderr
    assert check_expectations(scn, theirs) == []


# ---- kubernetes-sigs/scheduler-plugins (coscheduling) -----------------------------------------


def coscheduling(o: Obj) -> Obj:
    """A drasched PodGroup as scheduler-plugins' (minMember only), a pod's group label as its
    ``scheduling.x-k8s.io/pod-group`` label."""
    o = copy.deepcopy(o)
    if o.get("kind") == "PodGroup":
        assert set(o["spec"]) == {"minMember"}, o["spec"]
        o["apiVersion"] = "scheduling.x-k8s.io/v1alpha1"
    if o.get("kind") == "Pod":
        labels = o["metadata"]["labels"]
        labels["scheduling.x-k8s.io/pod-group"] = labels.pop("drasched.io/pod-group")
    return o


def test_coscheduling_pod_group_schedules_as_drasched(tmp_path: Path) -> None:
    path = HERE / "scheduler" / "004-gang-all-or-nothing.yaml"
    scn = load_scenario(path)
    theirs, stderr = _run(path, [coscheduling(o) for o in scn.manifests], tmp_path, "coscheduling")
    ours, _ = _run(path, scn.manifests, tmp_path, "drasched")
    assert _placements(theirs) == _placements(ours), stderr
    assert check_expectations(scn, theirs) == []
    assert "warning:" not in stderr


# ---- the upstream gang API (scheduling.k8s.io) ----------------------------------------------


def _upstream_group(pg: Obj, version: str) -> Obj:
    """A drasched PodGroup as an upstream PodGroup; its queue goes to the drasched.io/queue label."""
    spec = pg.get("spec") or {}
    md = copy.deepcopy(pg["metadata"])
    if spec.get("queue"):
        md.setdefault("labels", {})["drasched.io/queue"] = spec["queue"]
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": "PodGroup", "metadata": md,
            "spec": {"schedulingPolicy": {"gang": {"minCount": spec.get("minMember", 1)}},
                     "disruptionMode": {"all": {}} if version == "v1beta1" else "PodGroup"}}


def _upstream_pod(p: Obj) -> Obj:
    p = copy.deepcopy(p)
    group = (p["metadata"].get("labels") or {}).pop("drasched.io/pod-group", None)
    if group:
        p["spec"]["schedulingGroup"] = {"podGroupName": group}
    return p


def test_upstream_disruption_mode_all_evicts_the_whole_group(tmp_path: Path) -> None:
    """KEP-4671 disruptionMode all (1.36: PodGroup): the victim group g2 goes whole, on both nodes."""
    path = HERE / "preemption" / "005-victim-gang-evicted-whole.yaml"
    scn = load_scenario(path)
    for version in ("v1beta1", "v1alpha2"):
        upstream = [_upstream_group(o, version) if o.get("kind") == "PodGroup" else
                    _upstream_pod(o) if o.get("kind") == "Pod" else o for o in scn.manifests]
        theirs, stderr = _run(path, upstream, tmp_path, f"upstream-{version}")
        for i in range(1, 5):
            assert f"Pod:default/g2-{i}" not in theirs, stderr
            assert theirs[f"Pod:default/g1-{i}"]["status"]["phase"] == "Running"
        assert check_expectations(scn, theirs) == []
        assert "warning:" not in stderr


def _shared_claim_manifests(pods: int, nodes: int) -> list[Obj]:
    objs: list[Obj] = [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
         "status": {"allocatable": {"cpu": "128", "memory": "512Gi", "pods": "110"}}}
        for i in range(nodes)]
    objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "dataset", "namespace": "default"},
                 "spec": {"devices": {"requests": [{"name": "disk", "exactly": {
                     "deviceClassName": "dataset.example.com"}}]}},
                 "status": {"allocation": {"devices": {"results": [
                     {"request": "disk", "driver": "dataset.example.com", "pool": "shared", "device": "vol-0"}]}}}})
    objs.append({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": "readers", "namespace": "default"},
                 "spec": {"schedulingPolicy": {"gang": {"minCount": pods}},
                          "resourceClaims": [{"name": "data", "resourceClaimName": "dataset"}]}})
    objs += [{"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": f"r-{i:04d}", "namespace": "default"},
              "spec": {"schedulerName": "drasched", "schedulingGroup": {"podGroupName": "readers"},
                       "containers": [{"name": "c", "image": "busybox",
                                       "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "data"}]}}],
                       "resourceClaims": [{"name": "data", "resourceClaimName": "dataset"}]}}
             for i in range(pods)]
    return objs


GROUP_CLAIM_PODS = 1000


def test_upstream_group_claim_serves_a_thousand_pods(tmp_path: Path) -> None:
    """KEP-5729: a claim listed in the PodGroup's resourceClaims is reserved for the group as
    one consumer, so far more than 256 pods (the reservedFor limit) share it; the consumer is the
    upstream PodGroup itself, as kube-scheduler reserves it, and that PodGroup stays as written."""
    path = HERE / "gangapi" / "group-claims.yaml"
    objects, stderr = _run(path, _shared_claim_manifests(GROUP_CLAIM_PODS, 10), tmp_path, "claims")
    pods = {k: o for k, o in objects.items() if k.startswith("Pod:")}
    assert len(pods) == GROUP_CLAIM_PODS
    unbound = [k for k, o in pods.items() if not o["spec"].get("nodeName")]
    assert unbound == [], stderr[-2000:]
    reserved = objects["ResourceClaim:default/dataset"]["status"]["reservedFor"]
    group = objects["PodGroup:default/readers"]
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert reserved == [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "readers",
                         "uid": group["metadata"]["uid"]}]



PODGROUP_EXAMPLE = HERE / "gangapi" / "006-dra-example-driver-podgroup-resourceclaimtemplate.yaml"


def test_the_podgroup_claim_example_in_v1beta1_is_owned_by_and_reserved_for_its_v1beta1_groups(
        tmp_path: Path) -> None:
    """dra-example-driver's PodGroup example written for 1.37 (v1beta1) runs as the 1.36 one does, and
    its claims name the PodGroup in the version it was written in, as upstream's controller writes
    its own (``makeOwnerReference``: the PodGroup's SchemeGroupVersion); the condition is 1.37's."""
    scn = load_scenario(PODGROUP_EXAMPLE)
    ours, _ = _run(PODGROUP_EXAMPLE, scn.manifests, tmp_path, "v1alpha2")
    beta = [{**o, "apiVersion": "scheduling.k8s.io/v1beta1"} if o.get("kind") == "PodGroup" else o
            for o in scn.manifests]
    theirs, stderr = _run(PODGROUP_EXAMPLE, beta, tmp_path, "v1beta1")
    assert _placements(theirs) == _placements(ours)
    assert sorted(p for _, p in _placements(theirs).values()) == ["Running"] * 4, stderr
    ns = "podgroup-resourceclaimtemplate"
    for name in ("group-1", "group-2"):
        group = theirs[f"PodGroup:{ns}/{name}"]
        assert group["apiVersion"] == "scheduling.k8s.io/v1beta1"
        assert [(c["type"], c["status"]) for c in group["status"]["conditions"]] == [
            ("PodGroupInitiallyScheduled", "True")]
        (claim,) = [o for k, o in theirs.items() if k.startswith(f"ResourceClaim:{ns}/{name}-gpu-")]
        uid = group["metadata"]["uid"]
        assert claim["metadata"]["ownerReferences"] == [
            {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "name": name, "uid": uid,
             "controller": True}]
        assert claim["status"]["reservedFor"] == [
            {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": name, "uid": uid}]
    assert not any(o["apiVersion"].startswith("scheduling.drasched.io/") for k, o in theirs.items()
                   if k.startswith("PodGroup:"))
    assert "warning:" not in stderr


def test_a_drasched_pod_group_of_an_upstream_ones_name_wins_and_both_are_kept(tmp_path: Path) -> None:
    """As in serve: drasched's own PodGroup is the gang; the upstream one stays in the output as
    written and gets a NameConflict Warning naming both (and a warning when the input is read)."""
    path = HERE / "gangapi" / "name-conflict.yaml"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}
    ours = {"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 3}}
    theirs = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "g", "namespace": "default"},
              "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
             "spec": {"schedulingGroup": {"podGroupName": "g"},
                      "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
            for i in range(2)]
    objects, stderr = _run(path, [node, ours, theirs, *pods], tmp_path, "conflict")
    assert ("warning: scheduling.k8s.io/v1beta1 PodGroup default/g: ignored: scheduling.drasched.io/v1alpha1 "
            "PodGroup of the same name exists and wins") in stderr
    assert all(not objects[f"Pod:default/p{i}"]["spec"].get("nodeName") for i in range(2)), \
        "drasched's minMember 3 holds: 2 pods wait"
    kept = [o for o in _run_objects(tmp_path / "conflict") if o.get("kind") == "PodGroup"]
    assert sorted(o["apiVersion"] for o in kept) == ["scheduling.drasched.io/v1alpha1", "scheduling.k8s.io/v1beta1"]
    (event,) = [o for k, o in objects.items() if k.startswith("Event:") and o.get("reason") == "NameConflict"]
    assert event["involvedObject"]["apiVersion"] == "scheduling.k8s.io/v1beta1"


def _run_objects(sub: Path) -> list[Obj]:
    """Every object a run in ``sub`` wrote (two of one kind and name both)."""
    (out,) = sub.glob("*.out.yaml")
    return [o for o in yaml.safe_load_all(out.read_text()) if o]
