"""Pure claim helpers: upstream's generated-name rule, the group-claim rule, claim resolution."""

from __future__ import annotations

import pytest

from drasched.controllers.claimutil import (
    ClaimNotCreated,
    generate_name,
    group_claim_problems,
    group_entry_for,
    pod_claim_name,
    pod_is_done,
)
from tests.unit.controllers.helpers import by_name, from_template, pod, podgroup


@pytest.mark.parametrize(("pod_name", "entry", "want"), [
    # Short: "<pod>-<entry>-" unchanged.
    ("web", "gpu", "web-gpu-"),
    # 45 + 1 + 10 + 1 = 57 characters: at the limit, upstream keeps it whole.
    ("a" * 45, "gpu-claim0", "a" * 45 + "-gpu-claim0-"),
    # 58 > 57: both cut in proportion over the untruncated length 58:
    # 46*57//58 = 45 and 10*57//58 = 9, joined by one hyphen, no trailing hyphen (upstream).
    ("a" * 46, "gpu-claim0", "a" * 45 + "-gpu-claim"),
    # A long pod name keeps some of the entry: 100*57//105 = 54, 3*57//105 = 1.
    ("a" * 100, "gpu", "a" * 54 + "-g"),
    # A long entry name keeps some of the pod: 5*57//70 = 4, 63*57//70 = 51.
    ("job-0", "x" * 63, "job-" + "-" + "x" * 51),
])
def test_generate_name_matches_upstream_proportional_truncation(pod_name: str, entry: str, want: str) -> None:
    got = generate_name(pod_name, entry)
    assert got == want
    assert len(got) <= 57


def test_group_claim_rule_needs_same_name_and_same_source() -> None:
    """docs/design.md "Group claims" (KEP-5729): same entry name AND same claim or template name."""
    group = podgroup("g", [from_template("shared", "tmpl"), by_name("data", "dataset")])
    assert group_entry_for(from_template("shared", "tmpl"), group) == from_template("shared", "tmpl")
    assert group_entry_for(by_name("data", "dataset"), group) == by_name("data", "dataset")
    assert group_entry_for(from_template("shared", "other-tmpl"), group) is None
    assert group_entry_for(from_template("other", "tmpl"), group) is None
    assert group_entry_for(by_name("shared", "tmpl"), group) is None  # a claim name is not a template name
    assert group_entry_for(from_template("shared", "tmpl"), None) is None


def test_pod_is_done_follows_upstream_is_pod_done() -> None:
    p = pod("p")
    assert not pod_is_done(p)
    assert pod_is_done({**p, "status": {"phase": "Succeeded"}})
    assert pod_is_done({**p, "status": {"phase": "Failed"}})
    deleting = {**p, "metadata": {**p["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert pod_is_done(deleting)  # deleted before it was scheduled
    bound_deleting = {**deleting, "spec": {**p["spec"], "nodeName": "n"}}
    assert not pod_is_done(bound_deleting)  # still running until its kubelet finishes it


def test_pod_claim_name_resolves_like_upstream_resourceclaim_name() -> None:
    p = pod("p", [from_template("a", "t"), by_name("b", "plain"), from_template("c", "t")])
    p["status"] = {"resourceClaimStatuses": [{"name": "a", "resourceClaimName": "p-a-xyz12"}, {"name": "c"}]}
    entries = p["spec"]["resourceClaims"]
    assert pod_claim_name(p, entries[0]) == ("p-a-xyz12", True)
    assert pod_claim_name(p, entries[1]) == ("plain", False)
    assert pod_claim_name(p, entries[2]) == (None, True)  # recorded without a name: not needed
    p["status"] = {}
    with pytest.raises(ClaimNotCreated):
        pod_claim_name(p, entries[0])


def test_group_claim_problems() -> None:
    assert group_claim_problems(podgroup("g", [from_template(f"c{i}", "t") for i in range(4)])) == []
    five = group_claim_problems(podgroup("g", [from_template(f"c{i}", "t") for i in range(5)]))
    assert five == ["spec.resourceClaims: Too many: 5: must have at most 4 items"]
    bad = group_claim_problems(podgroup("g", [{"name": "x"}, from_template("x", "t")]))
    assert any("must specify one of" in p for p in bad)
    assert any("Duplicate value" in p for p in bad)
