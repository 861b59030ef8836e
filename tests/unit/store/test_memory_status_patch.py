"""A status merge patch: only what the patch brings is decoded again, and all of it is."""

from __future__ import annotations

import pytest

from drasched.api import kinds
from drasched.api.errors import BadRequest
from drasched.store.memory import MemoryStore


def _pod_store() -> MemoryStore:
    store = MemoryStore(auto_namespaces=True)
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                  "spec": {"containers": [{"name": "c", "image": "i"}], "nodeSelector": {"zone": "a"}}})
    return store


def test_a_status_patch_changes_status_and_keeps_the_stored_spec() -> None:
    store = _pod_store()
    patched = store.patch(kinds.POD, "p", "default", {"status": {"phase": "Running"}}, subresource="status")
    assert patched["status"]["phase"] == "Running"
    assert patched["spec"]["nodeSelector"] == {"zone": "a"}
    assert store.get(kinds.POD, "p", "default") == patched


def test_a_status_patch_that_brings_a_wrongly_typed_spec_is_refused_like_any_body() -> None:
    store = _pod_store()
    with pytest.raises(BadRequest, match=r"spec\.nodeSelector: expected object, got array"):
        store.patch(kinds.POD, "p", "default", {"spec": {"nodeSelector": ["a"]}, "status": {"phase": "Running"}},
                    subresource="status")
    with pytest.raises(BadRequest, match=r"status\.phase: expected string, got integer"):
        store.patch(kinds.POD, "p", "default", {"status": {"phase": 1}}, subresource="status")
    assert store.get(kinds.POD, "p", "default")["status"]["phase"] == "Pending"


def test_the_caller_owns_what_a_status_patch_returns() -> None:
    store = _pod_store()
    patched = store.patch(kinds.POD, "p", "default", {"status": {"phase": "Running"}}, subresource="status")
    patched["spec"]["nodeSelector"]["zone"] = "changed by the caller"
    assert store.get(kinds.POD, "p", "default")["spec"]["nodeSelector"] == {"zone": "a"}
