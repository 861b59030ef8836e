"""The binder against the memory store: happy path, lost races, pod deletion, groups, backoff."""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import Invalid
from drasched.api.meta import format_time
from drasched.binder import FINALIZER, Backoff
from tests.unit.binder.helpers import (
    NS,
    T0,
    FaultyStore,
    Recorder,
    add_bind_request,
    add_claim,
    add_group,
    add_pod,
    allocation,
    api_error,
    claim_entry,
    get_br,
    group_ref,
    make_binder,
    make_store,
    run_to_end,
)


def claim_state(store: Any, name: str) -> tuple[Any, list[str], list[str]]:
    c = store.get(kinds.RESOURCE_CLAIM, name, NS)
    st = c.get("status") or {}
    return unstamped(st.get("allocation")), [r["name"] for r in st.get("reservedFor") or []], \
        c["metadata"].get("finalizers") or []


def unstamped(alloc: Any) -> Any:
    """The allocation without the allocationTimestamp the binder adds (tested on its own)."""
    if not isinstance(alloc, dict):
        return alloc
    return {k: v for k, v in alloc.items() if k != "allocationTimestamp"}


def test_happy_path_allocates_reserves_binds_and_records() -> None:
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    alloc = allocation("n1", "gpu-0")
    add_bind_request(store, pod, "n1", [claim_entry(claim, alloc)])
    rec = Recorder()

    out = make_binder(store, rec).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason, out.attempts) == ("Succeeded", "Bound", 1)
    c = store.get(kinds.RESOURCE_CLAIM, "c1", NS)
    # upstream (1.36 default gates) stamps allocationTimestamp when it writes the reservation
    assert c["status"]["allocation"] == {**alloc, "allocationTimestamp": format_time(T0)}
    assert c["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": pod["metadata"]["uid"]}]
    assert c["metadata"]["finalizers"] == [FINALIZER]
    assert store.get(kinds.POD, "p", NS)["spec"]["nodeName"] == "n1"
    status = get_br(store, "p")["status"]
    assert status == {"phase": "Succeeded", "attempts": 1, "reason": "Bound",
                      "message": "Successfully assigned default/p to n1"}
    assert rec.events == [("p", "Normal", "Scheduled", "Successfully assigned default/p to n1")]
    # Finished BindRequests are kept (decision record) and left alone.
    assert make_binder(store).process(get_br(store, "p"), T0) is None


def test_claim_allocated_elsewhere_fails_and_rolls_back_everything() -> None:
    """Between scheduling and binding another scheduler took c2: fail, undo c1, leave c2's owner alone."""
    store, _ = make_store()
    c1, c2 = add_claim(store, "c1"), add_claim(store, "c2")
    pod = add_pod(store, "p", claims=["c1", "c2"])
    other = add_pod(store, "other", claims=["c2"])
    add_bind_request(store, pod, "n1", [claim_entry(c1, allocation("n1", "gpu-0")),
                                        claim_entry(c2, allocation("n1", "gpu-1"))])
    # The other writer: c2 allocated on n2 and reserved for "other".
    taken = store.get(kinds.RESOURCE_CLAIM, "c2", NS)
    taken["metadata"]["finalizers"] = [FINALIZER]
    taken = store.update(taken)
    taken["status"] = {"allocation": allocation("n2", "gpu-7"),
                       "reservedFor": [{"resource": "pods", "name": "other", "uid": other["metadata"]["uid"]}]}
    store.update_status(taken)
    rec = Recorder()

    out = make_binder(store, rec).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "ClaimAllocatedElsewhere")
    assert "claim default/c2 got allocated elsewhere in the meantime" in out.message
    assert claim_state(store, "c1") == (None, [], [])  # allocation, reservation and finalizer undone
    assert claim_state(store, "c2") == (allocation("n2", "gpu-7"), ["other"], [FINALIZER])
    assert "nodeName" not in store.get(kinds.POD, "p", NS)["spec"]
    assert get_br(store, "p")["status"]["phase"] == "Failed"
    assert [e[2] for e in rec.events] == ["FailedScheduling"]
    assert "got allocated elsewhere" in rec.events[0][3]
    assert [a for a, _ in rec.decisions] == ["rollback", "fail"]


def test_conflict_rereads_and_keeps_the_concurrent_reservation() -> None:
    """A shared claim gains another consumer between our read and our write: 409, re-read, append."""
    store, _ = make_store()
    claim = add_claim(store, "shared")
    a, b, p = add_pod(store, "a"), add_pod(store, "b"), add_pod(store, "p", claims=["shared"])
    claim["status"] = {"allocation": allocation("n1", "gpu-0"),
                       "reservedFor": [{"resource": "pods", "name": "a", "uid": a["metadata"]["uid"]}]}
    store.update_status(claim)
    add_bind_request(store, p, "n1", [claim_entry(claim, None)])  # already allocated: reserve only
    raced: list[int] = []

    def race(method: str, args: tuple[Any, ...]) -> None:
        if method == "update_status" and args[0]["kind"] == "ResourceClaim" and not raced:
            raced.append(1)
            c = store.get(kinds.RESOURCE_CLAIM, "shared", NS)
            c["status"]["reservedFor"].append({"resource": "pods", "name": "b", "uid": b["metadata"]["uid"]})
            store.update_status(c)

    faulty = FaultyStore(store, hook=race)
    out = make_binder(faulty).process(get_br(store, "p"), T0)

    assert out is not None and out.phase == "Succeeded"
    assert raced
    assert [w for w in faulty.writes if w.startswith("update_status:ResourceClaim")] == [
        "update_status:ResourceClaim/shared", "update_status:ResourceClaim/shared"]
    assert claim_state(store, "shared")[1] == ["a", "b", "p"]


def test_conflict_where_the_race_allocates_elsewhere_fails_cleanly() -> None:
    """Our status write loses to another allocation: re-read, see it, fail and undo the finalizer."""
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))])

    def race(method: str, args: tuple[Any, ...]) -> None:
        if method == "update_status" and args[0]["kind"] == "ResourceClaim":
            c = store.get(kinds.RESOURCE_CLAIM, "c1", NS)
            if not (c.get("status") or {}).get("allocation"):
                c["status"] = {"allocation": allocation("n2", "gpu-3"),
                               "reservedFor": [{"resource": "pods", "name": "x", "uid": "x-uid"}]}
                store.update_status(c)

    out = make_binder(FaultyStore(store, hook=race)).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "ClaimAllocatedElsewhere")
    # The claim is someone else's now: their allocation and reservation stay, so does the finalizer.
    assert claim_state(store, "c1") == (allocation("n2", "gpu-3"), ["x"], [FINALIZER])
    assert "nodeName" not in store.get(kinds.POD, "p", NS)["spec"]


def test_pod_deleted_before_binding_fails_without_writing_claims() -> None:
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))])
    store.delete(kinds.POD, "p", NS)
    rec = Recorder()

    out = make_binder(store, rec).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "PodDeleted")
    assert claim_state(store, "c1") == (None, [], [])
    assert rec.events == []  # no pod to tell


def test_pod_deleted_midway_rolls_back_what_was_written() -> None:
    """Claim allocated and reserved, then the pod goes before the bind: the claim is freed."""
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))])

    def delete_pod_before_bind(method: str, args: tuple[Any, ...]) -> None:
        if method == "bind":
            store.delete(kinds.POD, "p", NS)

    out = make_binder(FaultyStore(store, hook=delete_pod_before_bind)).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "PodDeleted")
    assert claim_state(store, "c1") == (None, [], [])


def test_pod_recreated_with_the_same_name_is_not_bound() -> None:
    store, _ = make_store()
    pod = add_pod(store, "p")
    add_bind_request(store, pod, "n1")
    store.delete(kinds.POD, "p", NS)
    add_pod(store, "p")

    out = make_binder(store).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "PodDeleted")
    assert "deleted and recreated" in out.message
    assert "nodeName" not in store.get(kinds.POD, "p", NS)["spec"]


def test_missing_node_fails_before_any_write() -> None:
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "gone", [claim_entry(claim, allocation("gone", "gpu-0"))])

    out = make_binder(store).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "NodeNotFound")
    assert claim_state(store, "c1") == (None, [], [])


def test_pod_bound_elsewhere_fails_and_leaves_its_claims_in_use() -> None:
    """Claims written, then someone else binds the pod to n2: fail, but free nothing a bound pod holds."""
    store, _ = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    alloc = allocation("n1", "gpu-0")
    add_bind_request(store, pod, "n1", [claim_entry(claim, alloc)])

    def bind_elsewhere_first(method: str, args: tuple[Any, ...]) -> None:
        if method == "bind":
            store.bind(NS, "p", "n2")

    out = make_binder(FaultyStore(store, hook=bind_elsewhere_first)).process(get_br(store, "p"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "PodBoundElsewhere")
    assert store.get(kinds.POD, "p", NS)["spec"]["nodeName"] == "n2"
    assert claim_state(store, "c1") == (alloc, ["p"], [FINALIZER])


def test_group_claim_is_reserved_for_the_group_once() -> None:
    store, _ = make_store()
    group = add_group(store, "g")
    claim = add_claim(store, "gc")
    p1 = add_pod(store, "p1", claims=["gc"], group="g")
    p2 = add_pod(store, "p2", claims=["gc"], group="g")
    alloc = allocation("n1", "gpu-0")
    add_bind_request(store, p1, "n1", [claim_entry(claim, alloc, group_ref(group))])
    add_bind_request(store, p2, "n1", [claim_entry(claim, alloc, group_ref(group))])
    binder = make_binder(store)

    assert binder.process(get_br(store, "p1"), T0).phase == "Succeeded"  # type: ignore[union-attr]
    assert binder.process(get_br(store, "p2"), T0).phase == "Succeeded"  # type: ignore[union-attr]

    c = store.get(kinds.RESOURCE_CLAIM, "gc", NS)
    assert c["status"]["reservedFor"] == [group_ref(group)]
    assert unstamped(c["status"]["allocation"]) == alloc


def test_group_reservation_stays_while_another_member_is_bound() -> None:
    store, _ = make_store()
    group = add_group(store, "g")
    claim = add_claim(store, "gc")
    p1 = add_pod(store, "p1", claims=["gc"], group="g")
    p2 = add_pod(store, "p2", claims=["gc"], group="g")
    alloc = allocation("n1", "gpu-0")
    add_bind_request(store, p1, "n1", [claim_entry(claim, alloc, group_ref(group))])
    add_bind_request(store, p2, "n1", [claim_entry(claim, alloc, group_ref(group))])
    binder = make_binder(store)
    assert binder.process(get_br(store, "p1"), T0).phase == "Succeeded"  # type: ignore[union-attr]
    store.delete(kinds.POD, "p2", NS)  # p2 fails; p1 runs on with the group's claim

    assert binder.process(get_br(store, "p2"), T0).reason == "PodDeleted"  # type: ignore[union-attr]

    assert claim_state(store, "gc") == (alloc, ["g"], [FINALIZER])


def test_group_reservation_is_undone_when_no_member_holds_it() -> None:
    store, _ = make_store()
    group = add_group(store, "g")
    claim = add_claim(store, "gc")
    p1 = add_pod(store, "p1", claims=["gc"], group="g")
    add_pod(store, "p2", claims=["gc"], group="g")  # not placed yet: holds nothing
    add_bind_request(store, p1, "n1", [claim_entry(claim, allocation("n1", "gpu-0"), group_ref(group))])

    def fail_bind(method: str, args: tuple[Any, ...]) -> None:
        if method == "bind":
            raise Invalid('Binding "p1" is invalid', "Binding", "p1")

    out = make_binder(FaultyStore(store, hook=fail_bind)).process(get_br(store, "p1"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "Invalid")
    assert claim_state(store, "gc") == (None, [], [])


def test_shared_claim_rollback_keeps_the_allocation_for_the_other_holder() -> None:
    """Two pods share a claim placed in one cycle; the second's bind fails: only its entry goes."""
    store, _ = make_store()
    claim = add_claim(store, "shared")
    p1, p2 = add_pod(store, "p1", claims=["shared"]), add_pod(store, "p2", claims=["shared"])
    alloc = allocation("n1", "gpu-0")
    add_bind_request(store, p1, "n1", [claim_entry(claim, alloc)])
    add_bind_request(store, p2, "n1", [claim_entry(claim, alloc)])
    binder = make_binder(store)
    assert binder.process(get_br(store, "p1"), T0).phase == "Succeeded"  # type: ignore[union-attr]
    store.delete(kinds.POD, "p2", NS)

    assert binder.process(get_br(store, "p2"), T0).phase == "Failed"  # type: ignore[union-attr]

    assert claim_state(store, "shared") == (alloc, ["p1"], [FINALIZER])


def test_transient_errors_back_off_exponentially_then_succeed() -> None:
    store, clock = make_store()
    pod = add_pod(store, "p")
    add_bind_request(store, pod, "n1")
    faulty = FaultyStore(store, at=0, only="bind", error=api_error())
    binder = make_binder(faulty, backoff=Backoff(1.0, 2.0, 60.0))

    first = binder.process(get_br(store, "p"), clock.now())
    assert first is not None and first.phase == "Pending" and first.retry_at == T0 + Backoff().delay(1)
    assert get_br(store, "p")["status"]["attempts"] == 1
    assert "etcdserver: request timed out" in get_br(store, "p")["status"]["message"]
    assert binder.process(get_br(store, "p"), clock.now()) is None  # still backing off

    faulty.at = 1  # the second bind fails too
    clock.advance_to(first.retry_at)
    second = binder.process(get_br(store, "p"), clock.now())
    assert second is not None and second.retry_at is not None
    assert second.retry_at - clock.now() == Backoff().delay(2)  # 2 s: doubled

    clock.advance_to(second.retry_at)
    third = binder.process(get_br(store, "p"), clock.now())
    assert third is not None and (third.phase, third.attempts) == ("Succeeded", 3)
    assert store.get(kinds.POD, "p", NS)["spec"]["nodeName"] == "n1"


def test_retries_are_bounded_then_rolled_back() -> None:
    store, clock = make_store()
    claim = add_claim(store, "c1")
    pod = add_pod(store, "p", claims=["c1"])
    add_bind_request(store, pod, "n1", [claim_entry(claim, allocation("n1", "gpu-0"))])

    def always_fail(method: str, args: tuple[Any, ...]) -> None:
        if method == "bind":
            raise api_error(503, "ServiceUnavailable")()

    binder = make_binder(FaultyStore(store, hook=always_fail), max_attempts=3)
    br = run_to_end(binder, store, "p", clock)

    assert br["status"]["phase"] == "Failed" and br["status"]["attempts"] == 3
    assert br["status"]["reason"] == "ServiceUnavailable"
    assert claim_state(store, "c1") == (None, [], [])
    assert clock.now() == T0 + Backoff().delay(1) + Backoff().delay(2)


def test_backoff_is_capped() -> None:
    assert Backoff(1.0, 2.0, 60.0).delay(10).total_seconds() == 60.0
    assert Backoff(0.5, 3.0, 60.0).delay(3).total_seconds() == 4.5


def test_malformed_bind_request_fails_without_crashing() -> None:
    store, _ = make_store()
    store.create({"apiVersion": "scheduling.drasched.io/v1alpha1", "kind": "BindRequest",
                  "metadata": {"name": "bad", "namespace": NS}, "spec": {"podName": "p"}})

    out = make_binder(store).process(get_br(store, "bad"), T0)

    assert out is not None and (out.phase, out.reason) == ("Failed", "Invalid")


def test_status_is_never_written_onto_a_newer_bind_request() -> None:
    """The scheduler replaced the BindRequest while we worked: the old outcome stays out of it."""
    store, _ = make_store()
    pod = add_pod(store, "p")
    add_bind_request(store, pod, "n1")
    old = get_br(store, "p")

    def replace(method: str, args: tuple[Any, ...]) -> None:
        if method == "update_status" and args[0]["kind"] == "BindRequest":
            store.delete(kinds.BIND_REQUEST, "p", NS)
            add_bind_request(store, pod, "n2")

    make_binder(FaultyStore(store, hook=replace)).process(old, T0)

    new = get_br(store, "p")
    assert new["spec"]["selectedNode"] == "n2" and "status" not in new
