"""Deployment and ReplicaSet rules that upstream's controllers define."""

from __future__ import annotations

from drasched.controllers.workloads.deployment import resolve_fenceposts, safe_encode, template_hash
from drasched.controllers.workloads.replicaset import deletion_order


def test_fenceposts_round_surge_up_and_unavailable_down() -> None:
    # deploymentutil.ResolveFenceposts: surge rounds up, unavailable down; both 0 -> 1 unavailable
    assert resolve_fenceposts("25%", "25%", 4) == (1, 1)
    assert resolve_fenceposts("25%", "25%", 6) == (2, 1)
    assert resolve_fenceposts("25%", "25%", 1) == (1, 0)
    assert resolve_fenceposts(0, 0, 10) == (0, 1)
    assert resolve_fenceposts(2, "50%", 3) == (2, 1)


def test_pod_template_hash_uses_upstreams_safe_alphabet_and_ignores_its_own_label() -> None:
    # rand.SafeEncodeString maps bytes into "bcdfghjklmnpqrstvwxz2456789": no vowels, no 0/1/3
    assert safe_encode("0123456789") == "456789bcdf"  # byte % 27: "0" is 48 -> 21 -> "4"
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}}
    labelled = {"metadata": {"labels": {"app": "a", "pod-template-hash": "x"}}, "spec": template["spec"]}
    assert template_hash(template) == template_hash(labelled)
    assert set(template_hash(template)) <= set("bcdfghjklmnpqrstvwxz2456789")
    changed = {"metadata": template["metadata"], "spec": {"containers": [{"name": "c", "image": "i:2"}]}}
    assert template_hash(changed) != template_hash(template)
    assert template_hash(template, collision_count=1) != template_hash(template)


def _pod(name: str, node: str = "", phase: str = "Pending", ready: bool = False, created: str = "") -> dict:
    conds = [{"type": "Ready", "status": "True"}] if ready else []
    return {"metadata": {"name": name, "creationTimestamp": created or "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": node} if node else {}, "status": {"phase": phase, "conditions": conds}}


def test_scale_down_deletes_unscheduled_then_pending_then_not_ready_then_newest() -> None:
    # controller.ActivePods ranking (abridged)
    pods = [_pod("ready-old", "n", "Running", True, "2026-01-01T00:00:00Z"),
            _pod("ready-new", "n", "Running", True, "2026-01-01T00:05:00Z"),
            _pod("running-not-ready", "n", "Running"),
            _pod("bound-pending", "n"),
            _pod("unscheduled")]
    assert [p["metadata"]["name"] for p in sorted(pods, key=deletion_order)] == [
        "unscheduled", "bound-pending", "running-not-ready", "ready-new", "ready-old"]


def test_statefulset_ordinal_is_the_whole_tail_of_the_name() -> None:
    from drasched.controllers.workloads.statefulset import ordinal_of

    assert ordinal_of("web", {"metadata": {"name": "web-12"}}) == 12
    assert ordinal_of("web", {"metadata": {"name": "web-x"}}) is None
    assert ordinal_of("web", {"metadata": {"name": "webapp-1"}}) is None
