"""A request that gets no answer (connection reset, refused) is an ApiError like any other.

Callers retry ApiErrors; a raw transport error escaping KubeStore ended the thread that met it
(the lease renewal took ``drasched serve`` down on one reset connection; the event writer
thread died). client-go likewise returns a failed round trip as an error to the caller.
"""

from __future__ import annotations

import pytest

from drasched.api import kinds
from drasched.api.errors import ApiError
from drasched.store.kube import KubeStore
from drasched.store.transport import MockTransport, NoAnswer, Request, Response


def _resetting(request: Request) -> Response:
    raise NoAnswer("RemoteDisconnected('Remote end closed connection without response')")


def test_a_reset_connection_is_an_api_error_naming_the_request() -> None:
    store = KubeStore("https://api.example", token="t", transport=MockTransport(_resetting))
    with pytest.raises(ApiError) as err:
        store.update({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                      "metadata": {"name": "drasched", "namespace": "kube-system", "resourceVersion": "1"}})
    assert err.value.code == 503
    assert "PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/drasched" in str(err.value)
    assert "no answer from the API server" in str(err.value)


def test_a_refused_connection_on_a_read_is_an_api_error() -> None:
    def refuse(request: Request) -> Response:
        raise NoAnswer("NewConnectionError('Connection refused')")

    store = KubeStore("https://api.example", token="t", transport=MockTransport(refuse))
    with pytest.raises(ApiError):
        store.get(kinds.POD, "p", "default")
