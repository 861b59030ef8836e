"""A binder that dies between any two writes leaves nothing behind: a restarted binder
(fresh memory, same store) finishes the bind or rolls it back, with the same end state as
a run that never crashed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from drasched.api import kinds
from drasched.api.errors import Invalid
from drasched.binder import FINALIZER
from tests.unit.binder.helpers import (
    NS,
    Crash,
    FaultyStore,
    Recorder,
    add_bind_request,
    add_claim,
    add_pod,
    allocation,
    claim_entry,
    ext_spec,
    get_br,
    make_binder,
    make_store,
    run_to_end,
    snapshot,
)

Hook = Callable[[str, tuple[Any, ...]], None]
Setup = Callable[[Any], Hook | None]


def bind_two_claims_and_extended(store: Any) -> Hook | None:
    """Two claims and an extended-resource claim: every kind of write the binder makes."""
    c1, c2 = add_claim(store, "c1"), add_claim(store, "c2")
    pod = add_pod(store, "p", claims=["c1", "c2"], gpus=1)
    add_bind_request(store, pod, "n1", [claim_entry(c1, allocation("n1", "gpu-0")),
                                        claim_entry(c2, allocation("n1", "gpu-1"))], ext_spec("n1", "gpu-2"))
    return None


def bind_refused(store: Any) -> Hook | None:
    """Everything written, then the server refuses the binding: every kind of write undone."""
    bind_two_claims_and_extended(store)

    def refuse(method: str, args: tuple[Any, ...]) -> None:
        if method == "bind":
            raise Invalid('Binding "p" is invalid: target.name: Invalid value', "Binding", "p")

    return refuse


def claim_taken(store: Any) -> Hook | None:
    """As above, but the last claim is taken by someone else: every write ends up undone."""
    c1, c2 = add_claim(store, "c1"), add_claim(store, "c2")
    pod = add_pod(store, "p", claims=["c1", "c2"], gpus=1)
    add_bind_request(store, pod, "n1", [claim_entry(c1, allocation("n1", "gpu-0")),
                                        claim_entry(c2, allocation("n1", "gpu-1"))], ext_spec("n1", "gpu-2"))
    other = add_pod(store, "other")
    c2 = store.get(kinds.RESOURCE_CLAIM, "c2", NS)
    c2["status"] = {"allocation": allocation("n2", "gpu-9"),
                    "reservedFor": [{"resource": "pods", "name": "other", "uid": other["metadata"]["uid"]}]}
    store.update_status(c2)
    return None


def reference(setup: Setup, record_success: bool = True) -> tuple[dict[str, Any], list[str]]:
    store, clock = make_store()
    faulty = FaultyStore(store, hook=setup(store))
    run_to_end(make_binder(faulty, record_success=record_success), store, "p", clock)
    return snapshot(store), faulty.writes


SCENARIOS = {"bind": bind_two_claims_and_extended, "refused": bind_refused, "claim-taken": claim_taken}


@pytest.mark.parametrize("record_success", [True, False], ids=["simulate", "serve-no-success-status"])
@pytest.mark.parametrize("after", [False, True], ids=["before-write", "after-write"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_crash_at_every_write_then_restart_converges(name: str, after: bool, record_success: bool) -> None:
    setup = SCENARIOS[name]
    want, writes = reference(setup, record_success)
    assert len(writes) >= 5, writes  # the sweep must cover a real sequence of steps
    for at in range(len(writes)):
        store, clock = make_store()
        hook = setup(store)
        with pytest.raises(Crash):
            make_binder(FaultyStore(store, at=at, after=after, hook=hook),
                        record_success=record_success).process(get_br(store, "p"), clock.now())
        restarted = make_binder(FaultyStore(store, hook=hook), record_success=record_success)
        run_to_end(restarted, store, "p", clock)
        assert snapshot(store) == want, f"crash {'after' if after else 'before'} write {at}: {writes[at]}"


def test_without_the_success_status_a_bind_writes_one_request_less_and_a_restart_writes_nothing() -> None:
    """serve's binder (``record_success=False``): the binding is the record of success."""
    recorded, recorded_writes = reference(bind_two_claims_and_extended)
    lean, lean_writes = reference(bind_two_claims_and_extended, record_success=False)
    assert recorded_writes == [*lean_writes, "update_status:BindRequest/p"]
    assert lean["brs"]["p"] == (None, None)
    assert {k: v for k, v in lean.items() if k != "brs"} == {k: v for k, v in recorded.items() if k != "brs"}

    store, clock = make_store()
    bind_two_claims_and_extended(store)
    rec = Recorder()
    run_to_end(make_binder(store, rec, record_success=False), store, "p", clock)
    assert [e[2] for e in rec.events] == ["Scheduled"]
    restarted, rec2 = FaultyStore(store), Recorder()
    out = make_binder(restarted, rec2, record_success=False).process(get_br(store, "p"), clock.now())
    assert out is not None and out.phase == "Succeeded"
    assert restarted.writes == [] and rec2.events == [] and rec2.decisions == []  # no second Scheduled event


def test_reference_outcomes_are_what_a_bind_and_a_rollback_should_be() -> None:
    """Pins the end states the sweep compares against, so a wrong reference cannot pass."""
    bound, _ = reference(bind_two_claims_and_extended)
    assert bound["pods"]["p"]["node"] == "n1"
    assert bound["pods"]["p"]["ercs"]["resourceClaimName"] == "p-extended-resources"
    assert bound["claims"]["c1"]["reservedFor"] == ["p"] and bound["claims"]["c1"]["finalizers"] == [FINALIZER]
    assert [s["reservedFor"] for s in bound["ext"]["p-extended-resources-"]] == [["p"]]
    assert bound["brs"]["p"] == ("Succeeded", "Bound")

    undone, writes = reference(bind_refused)
    assert writes[-1] == "update_status:BindRequest/p" and "create:ResourceClaim/p-extended-resources-" in writes
    assert undone["pods"]["p"]["node"] is None
    # 1.37: a pods/status write cannot strip extendedResourceClaimStatus; it names the deleted claim
    assert undone["pods"]["p"]["ercs"]["resourceClaimName"] == "p-extended-resources"
    for name in ("c1", "c2"):
        assert undone["claims"][name] == {"alloc": None, "reservedFor": [], "finalizers": None, "deleting": False}
    assert undone["ext"] == {}
    assert undone["brs"]["p"] == ("Failed", "Invalid")

    taken, _ = reference(claim_taken)
    assert taken["claims"]["c1"] == {"alloc": None, "reservedFor": [], "finalizers": None, "deleting": False}
    assert taken["claims"]["c2"]["reservedFor"] == ["other"]
    assert taken["brs"]["p"] == ("Failed", "ClaimAllocatedElsewhere")


def test_crash_after_finalizer_leaves_finalizer_only_and_restart_finishes() -> None:
    store, clock = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))])
    with pytest.raises(Crash):
        make_binder(FaultyStore(store, at=0, only="update", after=True)).process(get_br(store, "p"), clock.now())
    c = store.get(kinds.RESOURCE_CLAIM, "c1", NS)
    assert c["metadata"]["finalizers"] == [FINALIZER] and not (c.get("status") or {}).get("allocation")

    br = run_to_end(make_binder(store), store, "p", clock)

    assert br["status"]["phase"] == "Succeeded"
    assert store.get(kinds.RESOURCE_CLAIM, "c1", NS)["status"]["reservedFor"][0]["name"] == "p"


def test_crash_after_status_does_not_allocate_twice() -> None:
    store, clock = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))])
    with pytest.raises(Crash):
        make_binder(FaultyStore(store, at=0, only="update_status", after=True)).process(get_br(store, "p"),
                                                                                         clock.now())
    restarted = FaultyStore(store)

    br = run_to_end(make_binder(restarted), store, "p", clock)

    assert br["status"]["phase"] == "Succeeded"
    assert not any(w.endswith("ResourceClaim/c1") for w in restarted.writes)  # found done, not redone
    assert len(store.get(kinds.RESOURCE_CLAIM, "c1", NS)["status"]["reservedFor"]) == 1


def test_crash_after_bind_before_record_is_recorded_as_success() -> None:
    store, clock = make_store()
    pod = add_pod(store, "p")
    add_bind_request(store, pod, "n1")
    with pytest.raises(Crash):
        make_binder(FaultyStore(store, at=0, only="bind", after=True)).process(get_br(store, "p"), clock.now())
    assert store.get(kinds.POD, "p", NS)["spec"]["nodeName"] == "n1"
    assert "status" not in get_br(store, "p")

    br = run_to_end(make_binder(store), store, "p", clock)

    assert br["status"]["phase"] == "Succeeded"


def test_crash_before_bind_then_pod_deleted_rolls_back() -> None:
    store, clock = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"], gpus=1)
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))], ext_spec())
    with pytest.raises(Crash):
        make_binder(FaultyStore(store, at=0, only="bind")).process(get_br(store, "p"), clock.now())
    store.delete(kinds.POD, "p", NS)  # garbage collection marks the extended claim deleting

    br = run_to_end(make_binder(store), store, "p", clock)

    assert (br["status"]["phase"], br["status"]["reason"]) == ("Failed", "PodDeleted")
    c = store.get(kinds.RESOURCE_CLAIM, "c1", NS)
    assert not (c.get("status") or {}).get("allocation") and not c["metadata"].get("finalizers")
    assert store.list(kinds.RESOURCE_CLAIM, NS).items == [c]  # the extended claim is gone for good
