"""BindRequests whose create failed in a way that does not say whether the server applied it.

A connection cut after the server applied a write, a 5xx (a 504 timeout may come after
etcd took the write) or ``AlreadyExists`` (the create was applied before, and this
cycle decided from a view without it) leave the scheduler not knowing whether a BindRequest
exists. Until its watch shows it, the cache holds the pod as pending and its devices as free:
a cycle run then gives those devices, or that node's room, to another pod while the binder
carries out the BindRequest that does exist. Two claims then hold one device.

kube-scheduler keeps an assumed pod in its cache until its bind either succeeds or is known
to have failed; the same rule here: no cycle runs while such a create is unconfirmed. Each
is settled by reading it back: found, it goes into the cache (and the shared informers) at
once; NotFound, the create did not happen and the pod is free to place again.
"""

from __future__ import annotations

from typing import Any

from drasched.api import kinds
from drasched.api.errors import AlreadyExists, ApiError, NotFound
from drasched.scheduler.cache import SchedulerCache, object_key
from drasched.store.base import ClusterStore
from drasched.store.informer import SharedInformers

Obj = dict[str, Any]


def may_have_been_applied(error: ApiError) -> bool:
    """Whether a failed create may still have created the object.

    4xx answers other than ``AlreadyExists`` are refusals made before anything is stored
    (429 included: API Priority and Fairness rejects before the request runs); a 5xx, or no
    answer at all (the store reports it as 503), may come after the write.
    """
    return isinstance(error, AlreadyExists) or error.code >= 500 or error.code <= 0


class UnconfirmedCreates:
    """The BindRequests (``namespace/name``) created with an answer that leaves them in doubt."""

    def __init__(self) -> None:
        self._keys: dict[str, tuple[str, str]] = {}

    def __bool__(self) -> bool:
        return bool(self._keys)

    def note(self, bind_request: Obj) -> None:
        md = bind_request["metadata"]
        self._keys[object_key(bind_request)] = (str(md["name"]), str(md.get("namespace") or "default"))

    def settle(self, store: ClusterStore, cache: SchedulerCache, informers: SharedInformers | None) -> bool:
        """Read each one back; True when none is left in doubt.

        A read that fails keeps it (and the ones after it) in doubt for the next round.
        """
        for key, (name, namespace) in list(self._keys.items()):
            try:
                found = store.get(kinds.BIND_REQUEST, name, namespace)
            except NotFound:
                del self._keys[key]
                continue
            except ApiError:
                return False
            if informers is not None:
                informers.observe(found)  # the binder and the other controllers see it too
            cache.apply(kinds.BIND_REQUEST, "MODIFIED", found)
            del self._keys[key]
        return True
