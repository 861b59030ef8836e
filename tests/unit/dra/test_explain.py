"""Reasons read well alone and merge across nodes, each number true of every node it is counted for."""

from __future__ import annotations

from drasched.dra import explain as ex
from drasched.dra.explain import Reason, summarize, summarize_nodes


def test_insufficient_phrase_lists_counts_in_check_order() -> None:
    r = Reason(ex.INSUFFICIENT, class_name="gpu.example.com", needed=2, free=1,
               counts={ex.IN_USE: 2, ex.FAILED_CLASS_SELECTOR: 3})
    assert r.message == "not enough gpu.example.com devices: 3 failed class selector, 2 in use, 1 free, need 2"


def test_summarize_one_node_lets_the_request_closest_to_fitting_speak_for_its_class() -> None:
    # Two requests of one class on one node saw the same devices: their counts are not added.
    a = Reason(ex.INSUFFICIENT, class_name="gpu", needed=2, free=1, counts={ex.IN_USE: 1})
    b = Reason(ex.INSUFFICIENT, class_name="gpu", needed=4, free=0, counts={ex.IN_USE: 2, ex.TAINTED: 1},
               details=("broken:NoSchedule",))
    c = Reason(ex.CONSTRAINT, claim="default/c", details=("matchAttribute x/numa",))
    assert summarize([b, a, c, c]) == (
        "not enough gpu devices: 1 in use, 1 free, need 2; constraint unmet: matchAttribute x/numa")


def test_subrequests_on_one_node_count_each_device_once() -> None:
    subs = [Reason(ex.INSUFFICIENT, class_name="gpu", needed=n, free=0, counts={ex.IN_USE: 8}) for n in (4, 2, 1)]
    assert summarize(subs) == "not enough gpu devices: 8 in use, 0 free, need 1"
    assert summarize_nodes([(1, subs)]) == [(1, "not enough gpu devices: 8 in use, 0 free, need 1")]


def test_summarize_nodes_counts_nodes_per_phrase_and_never_sums_devices() -> None:
    four = Reason(ex.INSUFFICIENT, class_name="gpu", needed=5, free=4)
    assert summarize_nodes([(1, [four]), (1, [four])]) == [(2, "not enough gpu devices: on each node 4 free, need 5")]
    mig = Reason(ex.INSUFFICIENT, class_name="gpu", needed=9, free=4, counts={ex.FAILED_CLASS_SELECTOR: 16})
    none = Reason(ex.INSUFFICIENT, class_name="gpu", needed=9, free=0)
    eight = Reason(ex.INSUFFICIENT, class_name="gpu", needed=9, free=8)
    assert summarize_nodes([(1, [none]), (3, [eight]), (1, [mig])]) == [
        (5, "not enough gpu devices: on each node up to 16 failed class selector, at most 8 free, need 9")]
    con = Reason(ex.CONSTRAINT, claim="default/c", details=("matchAttribute x/parent",))
    two = Reason(ex.INSUFFICIENT, class_name="gpu", needed=2, free=0)
    assert summarize_nodes([(1, [two])] + [(1, [con])] * 4) == [
        (1, "not enough gpu devices: 0 free, need 2"), (4, "constraint unmet: matchAttribute x/parent")]


def test_a_reason_for_many_nodes_stands_for_its_own_count() -> None:
    r = [Reason(ex.INSUFFICIENT, class_name="gpu", needed=2, free=1, counts={ex.IN_USE: 3}, nodes=2),
         Reason(ex.INSUFFICIENT, class_name="gpu", needed=2, free=1, counts={ex.IN_USE: 3}, nodes=1)]
    assert summarize_nodes([(3, r)]) == [(3, "not enough gpu devices: on each node 3 in use, 1 free, need 2")]
    elsewhere = Reason(ex.CLAIM_ELSEWHERE, claim="ns/c")
    assert summarize_nodes([(2, [elsewhere])]) == [(2, "resourceclaim not available on the node (claim ns/c)")]


def test_other_kinds() -> None:
    assert Reason(ex.CLASS_MISSING, class_name="x").message == "device class x does not exist"
    assert "more than 32" in Reason(ex.TOO_MANY_RESULTS, claim="ns/c").message
    assert (Reason(ex.TIMED_OUT, details=("after 100000 search steps",)).message
            == "allocation search gave up (after 100000 search steps)")
    assert "admin-access=true" in Reason(ex.ADMIN_ACCESS_DENIED, claim="ns/c").message
    assert summarize([]) == ""
