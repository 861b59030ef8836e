"""Which ReplicaSet is a Deployment's current one: upstream deploymentutil FindNewReplicaSet / EqualIgnoreHash."""

from __future__ import annotations

from typing import Any

from drasched.controllers.workloads.deployment import equal_ignore_hash, find_new_set

Obj = dict[str, Any]
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}


def _rs(name: str, created: str, template: Obj) -> Obj:
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"template": template}}


def test_templates_are_compared_without_the_pod_template_hash_label() -> None:
    hashed = {**TEMPLATE, "metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}}
    assert equal_ignore_hash(hashed, TEMPLATE)
    bare = {"spec": TEMPLATE["spec"]}
    assert equal_ignore_hash({"metadata": {"labels": {"pod-template-hash": "abc"}}, "spec": TEMPLATE["spec"]}, bare)
    assert not equal_ignore_hash({**TEMPLATE, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}, TEMPLATE)
    assert not equal_ignore_hash({"metadata": {"labels": {"app": "api"}}, "spec": TEMPLATE["spec"]}, TEMPLATE)


def test_the_oldest_set_of_the_template_is_the_current_one_whoever_made_it() -> None:
    other = _rs("web-old", "2026-01-01T00:00:00Z", {**TEMPLATE, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    by_hand = _rs("web-by-hand", "2026-01-01T00:05:00Z", TEMPLATE)
    newer = _rs("web-7d9f", "2026-01-01T00:10:00Z",
                {**TEMPLATE, "metadata": {"labels": {"app": "web", "pod-template-hash": "7d9f"}}})
    assert find_new_set(TEMPLATE, [newer, other, by_hand]) is by_hand
    assert find_new_set(TEMPLATE, [other]) is None
