"""Claims from templates: create, adopt, record, missing templates (upstream handleClaim/syncPod)."""

from __future__ import annotations

from drasched.api import kinds
from drasched.controllers.claimutil import POD_CLAIM_ANNOTATION
from drasched.controllers.resourceclaim import ResourceClaimController
from tests.unit.controllers.helpers import (
    NS,
    claim,
    claims_in,
    decisions,
    events,
    from_template,
    get_pod,
    new_ctx,
    pod,
    settle,
    template,
)


def test_three_container_pod_gets_one_claim_per_template_entry() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu", labels={"team": "a"}, annotations={"note": "from-template"}))
    ctx.store.restore(template("nic"))
    entries = [from_template("gpu-0", "gpu"), from_template("gpu-1", "gpu"), from_template("rdma", "nic")]
    p = ctx.store.restore(pod("trainer", entries, containers=3))
    settle(ctx, [ResourceClaimController()])

    claims = claims_in(ctx)
    assert len(claims) == 3
    by_entry = {c["metadata"]["annotations"][POD_CLAIM_ANNOTATION]: c for c in claims}
    assert set(by_entry) == {"gpu-0", "gpu-1", "rdma"}
    for entry, c in by_entry.items():
        md = c["metadata"]
        assert md["generateName"] == f"trainer-{entry}-"
        assert md["name"].startswith(f"trainer-{entry}-") and len(md["name"]) == len(md["generateName"]) + 5
        # Upstream 1.37 (pkg/controller/resourceclaim handleClaim): the pod is the controlling
        # owner, and the reference sets nothing else (no blockOwnerDeletion).
        assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                          "uid": p["metadata"]["uid"], "controller": True}]
        # the template's spec, with the server's defaults (allocationMode ExactCount, count 1)
        assert c["spec"] == {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}}
    # Template labels and annotations are copied, plus the pod-claim-name annotation.
    assert by_entry["gpu-0"]["metadata"]["labels"] == {"team": "a"}
    assert by_entry["gpu-0"]["metadata"]["annotations"] == {"note": "from-template", POD_CLAIM_ANNOTATION: "gpu-0"}
    assert "labels" not in by_entry["rdma"]["metadata"]
    # The generated names are recorded in the pod status, in spec order.
    statuses = get_pod(ctx, "trainer")["status"]["resourceClaimStatuses"]
    assert statuses == [{"name": e, "resourceClaimName": by_entry[e]["metadata"]["name"]}
                        for e in ("gpu-0", "gpu-1", "rdma")]
    assert len([d for d in ctx.decisions if d.action == "create"]) == 3
    assert not events(ctx, "FailedResourceClaimCreation")  # as upstream: no Event for a successful create


def test_long_names_are_truncated_as_upstream() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    long_pod = "distributed-training-worker-replica-0000000000123"  # 49 characters
    ctx.store.restore(pod(long_pod, [from_template("accelerator", "gpu")]))
    settle(ctx, [ResourceClaimController()])
    (c,) = claims_in(ctx)
    # 49 + 1 + 11 + 1 = 62 > 57: 49*57//62 = 45 and 11*57//62 = 10.
    assert c["metadata"]["generateName"] == long_pod[:45] + "-" + "accelerato"
    assert len(c["metadata"]["name"]) == 56 + 5


def test_idle_pass_writes_nothing() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(pod("p", [from_template("gpu", "gpu")]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    rv = ctx.store.resource_version
    assert ctrl.reconcile(ctx) is False
    assert ctx.store.resource_version == rv


def test_adopts_claim_created_before_a_crash() -> None:
    """Upstream findPodResourceClaim: the claim exists (owned, annotated) but the pod status
    was never written; the controller must reuse it, not create a second one."""
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    p = ctx.store.restore(pod("p", [from_template("gpu", "gpu")]))
    ctx.store.restore(claim("p-gpu-abcde", allocated=False, finalizer=False, owner=p,
                           annotations={POD_CLAIM_ANNOTATION: "gpu"}))
    settle(ctx, [ResourceClaimController()])
    assert [c["metadata"]["name"] for c in claims_in(ctx)] == ["p-gpu-abcde"]
    assert get_pod(ctx, "p")["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName":
                                                                      "p-gpu-abcde"}]
    assert len(decisions(ctx, "adopt", "p-gpu-abcde")) == 1
    assert not [d for d in ctx.decisions if d.action == "create"]


def test_does_not_adopt_claims_of_another_owner_or_entry() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    p = ctx.store.restore(pod("p", [from_template("gpu", "gpu")]))
    other = ctx.store.restore(pod("other"))
    ctx.store.restore(claim("foreign", allocated=False, finalizer=False, owner=other,
                           annotations={POD_CLAIM_ANNOTATION: "gpu"}))
    ctx.store.restore(claim("wrong-entry", allocated=False, finalizer=False, owner=p,
                           annotations={POD_CLAIM_ANNOTATION: "nic"}))
    settle(ctx, [ResourceClaimController()])
    recorded = get_pod(ctx, "p")["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert recorded.startswith("p-gpu-")
    assert not decisions(ctx, "adopt")


def test_recreates_a_recorded_claim_that_was_deleted() -> None:
    """Upstream handleClaim: a claim named in the status but gone is created again."""
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(pod("p", [from_template("gpu", "gpu")]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    first = get_pod(ctx, "p")["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    ctx.store.delete(kinds.RESOURCE_CLAIM, first, NS)
    settle(ctx, [ctrl])
    second = get_pod(ctx, "p")["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    assert second != first and ctx.store.peek(kinds.RESOURCE_CLAIM, second, NS) is not None


def test_missing_template_warns_once_and_retries_when_it_appears() -> None:
    ctx = new_ctx()
    ctx.store.restore(pod("p", [from_template("gpu", "not-yet")]))
    ctrl = ResourceClaimController()
    settle(ctx, [ctrl])
    warnings = events(ctx, "FailedResourceClaimCreation", "p")
    assert len(warnings) == 1
    assert warnings[0]["type"] == "Warning"
    assert warnings[0]["message"] == ('PodResourceClaim gpu: resource claim template \'not-yet\': '
                                      'resourceclaimtemplates.resource.k8s.io "not-yet" not found')
    assert claims_in(ctx) == []
    # Unrelated changes to the pod do not repeat the warning.
    ctx.store.patch(kinds.POD, "p", NS, {"metadata": {"labels": {"x": "y"}}})
    settle(ctx, [ctrl])
    assert len(events(ctx, "FailedResourceClaimCreation", "p")) == 1
    # The retry happens once the template exists.
    ctx.store.restore(template("not-yet"))
    settle(ctx, [ctrl])
    assert len(claims_in(ctx)) == 1
    assert "resourceClaimStatuses" in get_pod(ctx, "p")["status"]


def test_no_claims_for_done_or_deleting_pods() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    done = pod("done", [from_template("gpu", "gpu")])
    done["status"] = {"phase": "Succeeded"}
    ctx.store.restore(done)
    settle(ctx, [ResourceClaimController()])
    assert claims_in(ctx) == []
