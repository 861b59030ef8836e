"""The embedded disruption controller: which budgets a change concerns, upstream's finders, the writes."""

from __future__ import annotations

from typing import Any

import pytest

from drasched.api import kinds
from drasched.controllers.disruption import DisruptionController
from drasched.controllers.pdbstatus import ScaleError
from tests.unit.controllers.helpers import NS, events, new_ctx

Obj = dict[str, Any]


def _pod(name: str, app: str, *, ready: bool = True, owner: Obj | None = None) -> Obj:
    md: Obj = {"name": name, "namespace": NS, "labels": {"app": app}}
    if owner is not None:
        md["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                  "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                  "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def _pdb(name: str, app: str, **spec: Any) -> Obj:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec}}


def _template(app: str) -> Obj:
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _status(ctx: Any, name: str) -> Obj:
    return ctx.store.get(kinds.POD_DISRUPTION_BUDGET, name, NS).get("status") or {}


def test_without_budgets_pods_are_not_followed() -> None:
    ctx = new_ctx()
    ctx.store.restore(_pod("a", "web"))
    controller = DisruptionController()
    assert not controller.reconcile(ctx)
    assert controller.pods is None


def test_a_pod_change_resyncs_the_budgets_that_select_it() -> None:
    ctx = new_ctx()
    for name in ("a", "b"):
        ctx.store.restore(_pod(name, "web"))
    ctx.store.restore(_pod("x", "other"))
    ctx.store.restore(_pdb("web", "web", minAvailable=1))
    ctx.store.restore(_pdb("other", "other", minAvailable=1))
    controller = DisruptionController()
    assert controller.reconcile(ctx)
    assert (_status(ctx, "web")["currentHealthy"], _status(ctx, "web")["disruptionsAllowed"]) == (2, 1)
    other_rv = ctx.store.get(kinds.POD_DISRUPTION_BUDGET, "other", NS)["metadata"]["resourceVersion"]
    assert not controller.reconcile(ctx)  # its own writes change nothing
    ctx.store.patch(kinds.POD, "b", NS, {"status": {"conditions": [{"type": "Ready", "status": "False"}]}},
                    subresource="status")
    assert controller.reconcile(ctx)
    assert (_status(ctx, "web")["currentHealthy"], _status(ctx, "web")["disruptionsAllowed"]) == (1, 0)
    assert _status(ctx, "web")["conditions"][0]["reason"] == "InsufficientPods"
    assert ctx.store.get(kinds.POD_DISRUPTION_BUDGET, "other", NS)["metadata"]["resourceVersion"] == other_rv
    ctx.store.patch(kinds.POD, "x", NS, {"metadata": {"labels": {"app": "web"}}})  # x moves between budgets
    assert controller.reconcile(ctx)
    assert (_status(ctx, "web")["expectedPods"], _status(ctx, "other")["expectedPods"]) == (3, 0)
    assert [e["reason"] for e in events(ctx, name="other")] == ["NoPods"]
    ctx.store.delete(kinds.POD_DISRUPTION_BUDGET, "web", NS)
    ctx.store.delete(kinds.POD_DISRUPTION_BUDGET, "other", NS)
    assert not controller.reconcile(ctx)
    assert controller.pods is None


def test_a_selector_change_finds_the_budgets_pods_again() -> None:
    ctx = new_ctx()
    ctx.store.restore(_pod("a", "web"))
    ctx.store.restore(_pod("b", "api"))
    ctx.store.restore(_pdb("b", "web", minAvailable=0))
    controller = DisruptionController()
    controller.reconcile(ctx)
    ctx.store.patch(kinds.POD_DISRUPTION_BUDGET, "b", NS, {"spec": {"selector": {"matchLabels": {"app": "api"}},
                                                                    "minAvailable": 1}})
    controller.reconcile(ctx)
    status = _status(ctx, "b")
    assert (status["expectedPods"], status["observedGeneration"]) == (1, 2)


def test_scale_follows_upstreams_finders() -> None:
    ctx = new_ctx()
    dep = ctx.store.restore({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": NS},
                             "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
                                      "template": _template("web")}})
    owned = ctx.store.restore({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
        "name": "d-1", "namespace": NS, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
                                                              "uid": dep["metadata"]["uid"], "controller": True}]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": _template("web")}})
    bare = ctx.store.restore({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": NS},
                              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "r"}},
                                       "template": _template("r")}})
    lws = ctx.store.restore({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                             "metadata": {"name": "l", "namespace": NS},
                             "spec": {"replicas": 2,
                                      "leaderWorkerTemplate": {"size": 4, "workerTemplate": _template("l")}}})
    controller = DisruptionController()
    ctx.store.restore(_pdb("any", "nothing", maxUnavailable=1))
    controller.reconcile(ctx)

    def ref(obj: Obj) -> Obj:
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
                "uid": obj["metadata"]["uid"], "controller": True}

    assert controller._find(ref(owned), NS) == (dep["metadata"]["uid"], 5)  # getPodDeployment
    assert controller._find(ref(bare), NS) == (bare["metadata"]["uid"], 3)  # getPodReplicaSet
    assert controller._find(ref(lws), NS) == (lws["metadata"]["uid"], 8)
    assert controller._find({**ref(bare), "uid": "another"}, NS) is None  # a namesake: not this controller
    with pytest.raises(ScaleError, match=r"^daemonsets\.apps does not implement the scale subresource$"):
        controller._find({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "x", "uid": "u"}, NS)
    with pytest.raises(ScaleError, match=r'^no matches for kind "PyTorchJob" in version "kubeflow.org/v1"$'):
        controller._find({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "x", "uid": "u"}, NS)
