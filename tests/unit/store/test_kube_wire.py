"""KubeStore's requests and error mapping, against a fake transport (no cluster needed).

The contract suite proves behaviour against a real server; this pins down the wire
details that a real server cannot be made to produce on demand (an HTTP 410 on a watch,
a non-Status error body) and the exact requests we send.
"""

from __future__ import annotations

import json

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError, Conflict, Gone, NotFound, TooManyRequests
from drasched.store.kube import KubeStore
from drasched.store.transport import MockTransport, Request, Response, json_response


def make(handler: object) -> tuple[KubeStore, list[Request]]:
    seen: list[Request] = []

    def record(request: Request) -> Response:
        seen.append(request)
        return handler(request)  # type: ignore[operator,no-any-return]

    return KubeStore("http://api.test", token="t", transport=MockTransport(record)), seen


def status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def test_writes_are_strict_and_authenticated() -> None:
    store, seen = make(lambda r: json_response(201, {"metadata": {"name": "a"}}))
    got = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}})
    assert got["kind"] == "ConfigMap" and got["apiVersion"] == "v1"
    req = seen[0]
    assert (req.method, req.path, req.params["fieldValidation"]) == (
        "POST",
        "/api/v1/namespaces/ns/configmaps",
        "Strict",
    )
    assert req.headers["Authorization"] == "Bearer t"


def test_patch_is_a_merge_patch_of_the_subresource() -> None:
    store, seen = make(lambda r: json_response(200, {"metadata": {"name": "c"}}))
    store.patch(kinds.RESOURCE_CLAIM, "c", "ns", {"status": {"x": 1}}, subresource="status")
    req = seen[0]
    assert req.method == "PATCH"
    assert req.path == "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status"
    assert req.headers["Content-Type"] == "application/merge-patch+json"
    assert json.loads(req.content) == {"status": {"x": 1}}


def test_delete_sends_preconditions_and_background_propagation() -> None:
    store, seen = make(lambda r: json_response(200, {"kind": "Status", "status": "Success"}))
    assert store.delete(kinds.POD, "p", "ns", uid="u", resource_version="7") is None
    assert json.loads(seen[0].content) == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "propagationPolicy": "Background",
        "preconditions": {"uid": "u", "resourceVersion": "7"},
    }


def test_bind_posts_a_binding() -> None:
    store, seen = make(lambda r: json_response(201, {"kind": "Status", "status": "Success"}))
    store.bind("ns", "p", "node-1", pod_uid="u")
    assert seen[0].path == "/api/v1/namespaces/ns/pods/p/binding"
    assert json.loads(seen[0].content) == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }


def test_evict_posts_a_policy_v1_eviction_and_429_is_too_many_requests() -> None:
    store, seen = make(lambda r: json_response(201, status(201, "", "")))
    store.evict("ns", "p", uid="u-1")
    req = seen[0]
    assert (req.method, req.path) == ("POST", "/api/v1/namespaces/ns/pods/p/eviction")
    assert json.loads(req.content) == {"apiVersion": "policy/v1", "kind": "Eviction",
                                       "metadata": {"name": "p", "namespace": "ns"},
                                       "deleteOptions": {"preconditions": {"uid": "u-1"}}}
    body = status(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
    body["details"] = {"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget web needs 1"}]}
    store, _ = make(lambda r: json_response(429, body))
    with pytest.raises(TooManyRequests) as e:
        store.evict("ns", "p")
    assert e.value.code == 429 and e.value.causes[0].message == "The disruption budget web needs 1"


def test_errors_map_to_typed_exceptions() -> None:
    store, _ = make(lambda r: json_response(404, status(404, "NotFound", 'pods "p" not found')))
    with pytest.raises(NotFound, match='pods "p" not found'):
        store.get(kinds.POD, "p", "ns")
    store, _ = make(lambda r: json_response(409, status(409, "Conflict", "modified")))
    with pytest.raises(Conflict):
        store.update({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}})
    store, _ = make(lambda r: Response(503, b"upstream connect error", "Service Unavailable"))
    with pytest.raises(ApiError) as e:
        store.get(kinds.POD, "p", "ns")
    assert e.value.code == 503 and "upstream connect error" in str(e.value)


def test_list_follows_continue_and_keeps_the_first_version() -> None:
    pages = {
        None: {"metadata": {"resourceVersion": "10", "continue": "tok"}, "items": [{"metadata": {"name": "a"}}]},
        "tok": {"metadata": {"resourceVersion": "12"}, "items": [{"metadata": {"name": "b"}}]},
    }
    store, seen = make(lambda r: json_response(200, pages[r.params.get("continue")]))
    result = store.list(kinds.NODE, label_selector="a=b")
    assert [o["metadata"]["name"] for o in result.items] == ["a", "b"]
    assert all(o["kind"] == "Node" for o in result.items)
    assert result.resource_version == "10"
    assert [r.params.get("labelSelector") for r in seen] == ["a=b", "a=b"]


def watch_body(*events: dict) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def test_watch_streams_events_and_bookmarks() -> None:
    body = watch_body(
        {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "5"}}},
        {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9"}}},
    )
    store, seen = make(lambda r: Response(200, body))
    got = list(store.watch(kinds.POD, "4", "ns", timeout_seconds=2.5))
    assert [(e.type, e.object["metadata"]["resourceVersion"]) for e in got] == [("ADDED", "5"), ("BOOKMARK", "9")]
    assert got[0].object["kind"] == "Pod"
    params = seen[0].params
    assert (params["watch"], params["allowWatchBookmarks"], params["resourceVersion"], params["timeoutSeconds"]) == (
        "1",
        "true",
        "4",
        "3",
    )


def test_watch_410_is_gone_as_http_status_or_error_event() -> None:
    expired = status(410, "Expired", "too old resource version: 1 (100)")
    store, _ = make(lambda r: json_response(410, expired))
    with pytest.raises(Gone):
        list(store.watch(kinds.POD, "1"))
    store, _ = make(lambda r: Response(200, watch_body({"type": "ERROR", "object": expired})))
    with pytest.raises(Gone, match="too old"):
        list(store.watch(kinds.POD, "1"))
    other = status(500, "InternalError", "etcd event received with PrevKv=nil")
    store, _ = make(lambda r: Response(200, watch_body({"type": "ERROR", "object": other})))
    with pytest.raises(ApiError) as e:
        list(store.watch(kinds.POD, "1"))
    assert e.value.code == 500 and not isinstance(e.value, Gone)
