"""A group claim stays while another member of the group is bound, however the member joined."""

from __future__ import annotations

import pytest

from drasched.binder.claims import group_still_needs
from tests.unit.binder.helpers import NS, add_pod, make_store


@pytest.mark.parametrize("upstream", [False, True], ids=["label", "schedulingGroup"])
def test_a_bound_member_keeps_the_group_claim(upstream: bool) -> None:
    store, _ = make_store()
    for name in ("m-0", "m-1"):
        pod = add_pod(store, name, group=None if upstream else "train")
        if upstream:
            pod["spec"]["schedulingGroup"] = {"podGroupName": "train"}
        if name == "m-1":
            pod["spec"]["nodeName"] = "n1"
        store.update(pod)
    add_pod(store, "stranger")  # in no group: never counts
    assert group_still_needs(store, NS, "train", "m-0")
    assert not group_still_needs(store, NS, "train", "m-1")  # m-0 is neither bound nor binding
