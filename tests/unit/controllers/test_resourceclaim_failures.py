"""A sync that fails with anything, not only an API error, is retried with backoff and never
strands the keys synced beside it (upstream ``processNextWorkItem``: every error from the
sync handler goes back with ``AddRateLimited``; pkg/controller/resourceclaim/controller.go).

What serve met: while kube-apiserver restarted, the Lease could not be renewed, so the
leadership fence refused the claim controller's writes with ``LeadershipLost`` (not an
``ApiError``). The key that met it was dropped, and the keys of its batch not yet started
were cancelled with it: held by the queue forever, their pods still "queued for claims",
so the scheduler never reported them either.
"""

from __future__ import annotations

import contextlib

from drasched.controllers.resourceclaim import ResourceClaimController
from drasched.serve.fencing import FencedStore
from drasched.sim.context import SimContext
from tests.unit.controllers.helpers import claims_in, from_template, get_pod, new_ctx, pod, settle, template


class Fence:
    """Serve's leadership fence, opened and closed by the test."""

    def __init__(self) -> None:
        self.open = False

    def may_write(self) -> bool:
        return self.open


def _fenced(ctx: SimContext, fence: Fence) -> SimContext:
    fenced = new_ctx()
    fenced.store, fenced.clock = FencedStore(ctx.store, fence), ctx.clock  # type: ignore[assignment]
    return fenced


def _round(ctrl: ResourceClaimController, ctx: SimContext) -> None:
    """One round as serve's loop runs it: a round that raises is logged and the loop goes on."""
    with contextlib.suppress(Exception):
        ctrl.reconcile(ctx)


def _recorded(ctx: SimContext, name: str) -> list[dict[str, str]]:
    return list((get_pod(ctx, name).get("status") or {}).get("resourceClaimStatuses") or [])


def test_a_sync_refused_by_the_fence_is_retried_once_writes_pass_again() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(pod("p", [from_template("gpu", "gpu")]))
    fence = Fence()
    fenced = _fenced(ctx, fence)
    ctrl = ResourceClaimController()
    _round(ctrl, fenced)  # refused: nothing written, the key waits in its backoff
    assert not claims_in(ctx)
    assert fenced.next_wakeup() is not None, "the refused key must come back by itself"
    fence.open = True
    settle(fenced, [ctrl])
    (claim,) = claims_in(ctx)
    assert _recorded(ctx, "p") == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]


def test_one_refused_sync_strands_none_of_the_keys_synced_beside_it() -> None:
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    names = [f"p{i}" for i in range(12)]
    for name in names:
        ctx.store.restore(pod(name, [from_template("gpu", "gpu")]))
    fence = Fence()
    fenced = _fenced(ctx, fence)
    ctrl = ResourceClaimController(workers=3)  # serve's pool: a batch of pods side by side
    try:
        _round(ctrl, fenced)  # every write refused, the first one at once
        fence.open = True
        settle(fenced, [ctrl])
        assert {n: len(_recorded(ctx, n)) for n in names} == dict.fromkeys(names, 1)
        assert len(claims_in(ctx)) == len(names)
        uids = [get_pod(ctx, n)["metadata"]["uid"] for n in names]
        assert [u for u in uids if ctrl.queued(u)] == [], "a pod left 'queued for claims' is never reported"
    finally:
        ctrl.close()


def test_the_pod_status_write_refused_after_the_claim_was_created_adopts_it_on_retry() -> None:
    """The fence closed between the two writes of one sync: the claim exists, the pod does
    not name it yet. The retry adopts that claim (one claim per pod, not two)."""
    ctx = new_ctx()
    ctx.store.restore(template("gpu"))
    ctx.store.restore(pod("p", [from_template("gpu", "gpu")]))
    fence = Fence()
    fence.open = True
    fenced = _fenced(ctx, fence)
    store = fenced.store
    created = store.create

    def create_then_lose_the_lease(obj: dict) -> dict:  # type: ignore[type-arg]
        out: dict = created(obj)  # type: ignore[type-arg]
        if obj.get("kind") == "ResourceClaim":
            fence.open = False
        return out

    store.create = create_then_lose_the_lease  # type: ignore[method-assign]
    ctrl = ResourceClaimController()
    _round(ctrl, fenced)
    assert len(claims_in(ctx)) == 1 and not _recorded(ctx, "p")
    fence.open = True
    settle(fenced, [ctrl])
    (claim,) = claims_in(ctx)
    assert _recorded(ctx, "p") == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
