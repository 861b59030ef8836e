"""Reasons read well alone and merge across nodes."""

from __future__ import annotations

from drasched.dra import explain as ex
from drasched.dra.explain import Reason, summarize


def test_insufficient_phrase_lists_counts_in_check_order() -> None:
    r = Reason(ex.INSUFFICIENT, class_name="gpu.example.com", needed=2, free=1,
               counts={ex.IN_USE: 2, ex.FAILED_CLASS_SELECTOR: 3})
    assert r.message == "not enough gpu.example.com devices: 3 failed class selector, 2 in use, 1 free, need 2"


def test_summarize_merges_same_class_and_keeps_others() -> None:
    a = Reason(ex.INSUFFICIENT, class_name="gpu", needed=2, free=1, counts={ex.IN_USE: 1})
    b = Reason(ex.INSUFFICIENT, class_name="gpu", needed=4, free=0, counts={ex.IN_USE: 2, ex.TAINTED: 1},
               details=("broken:NoSchedule",))
    c = Reason(ex.CONSTRAINT, claim="default/c", details=("matchAttribute x/numa",))
    assert summarize([a, b, c, c]) == (
        "not enough gpu devices: 1 tainted, 3 in use, 1 free, need 4 (broken:NoSchedule); "
        "constraint unmet: matchAttribute x/numa")


def test_other_kinds() -> None:
    assert Reason(ex.CLASS_MISSING, class_name="x").message == "device class x does not exist"
    assert "more than 32" in Reason(ex.TOO_MANY_RESULTS, claim="ns/c").message
    assert (Reason(ex.TIMED_OUT, details=("after 100000 search steps",)).message
            == "allocation search gave up (after 100000 search steps)")
    assert "admin-access=true" in Reason(ex.ADMIN_ACCESS_DENIED, claim="ns/c").message
    assert summarize([]) == ""
