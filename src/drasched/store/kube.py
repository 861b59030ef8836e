"""ClusterStore over a real kube-apiserver: raw REST over urllib3, JSON (msgspec), plain dicts.

No typed client on purpose: the scheduler works on wire-form dicts everywhere, and the
memory store must match what this store returns byte for byte in shape (see
tests/contract). Every write asks ``fieldValidation=Strict`` so that a typo in a field
name fails loudly instead of being dropped by the server.
"""

from __future__ import annotations

import base64
import contextlib
import math
import os
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

from drasched.api import kinds
from drasched.api.errors import ApiError, BadRequest, Gone, from_status
from drasched.api.kinds import ResourceType
from drasched.store.base import ListResult, Obj, WatchEvent
from drasched.store.credentials import ClientConfig, RateLimiter, StaticToken, load_client_config
from drasched.store.transport import (
    CurlTransport,
    NoAnswer,
    ReadTimeout,
    Request,
    Response,
    Transport,
    Urllib3Transport,
    with_query,
)

STRICT = {"fieldValidation": "Strict"}
_encode = msgspec.json.encode
_decode = msgspec.json.decode


def _raise_for(resp: Response) -> None:
    """Map a non-2xx answer to the typed error its ``Status`` body names."""
    if resp.is_success:
        return
    try:
        body = resp.json()
    except msgspec.DecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        body.setdefault("code", resp.status)
        raise from_status(body)
    text = resp.text.strip()[:500] or resp.reason
    raise from_status({"code": resp.status, "message": f"HTTP {resp.status}: {text}"})


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise BadRequest("object has no metadata")
    return meta


def _ssl_context(
    ca_file: str | None,
    ca_data: str | None,
    verify: bool,
    cert_file: str | None,
    key_file: str | None,
) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=ca_file, cadata=ca_data)
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert_file:
        ctx.load_cert_chain(cert_file, key_file)
    return ctx


class KubeStore:
    """The ClusterStore contract against a real API server (sync, one HTTP/1.1 pool).

    ``watch`` holds one connection of the pool while it is iterated; the pool is large
    enough for a watch per kind (``drasched serve`` keeps about a dozen open) plus the
    binder's parallel writers, and keeps them all alive: a connection closed for lack of
    keep-alive slots costs a new TLS handshake on the next request. Safe to share between
    threads.
    ``kubeconfig`` fills in whatever the other arguments leave unset; ``transport``
    replaces the network (tests pass a :class:`~drasched.store.transport.MockTransport`).
    A bearer token from a source that may rotate is asked for afresh after a 401 and the
    request sent once more (client-go's exec and file token rules).
    """

    def __init__(
        self,
        server: str | None = None,
        token: str | None = None,
        ca_file: str | None = None,
        verify: bool = True,
        kubeconfig: str | None = None,
        *,
        cert_file: str | None = None,
        key_file: str | None = None,
        ca_data: str | None = None,
        timeout: float = 30.0,
        page_size: int = 500,
        transport: Transport | None = None,
        config: ClientConfig | None = None,
        context: str | None = None,
        qps: float = 0.0,
        burst: int = 0,
    ) -> None:
        if config is None and (kubeconfig or context):
            config = load_client_config(kubeconfig, context)
        if config is None:
            if not server:
                raise ValueError("KubeStore needs a server URL, a kubeconfig or a ClientConfig")
            config = ClientConfig(server=server)
        # explicit arguments win over what the configuration says
        config.server = server or config.server
        if token:
            config.token_source = StaticToken(token)
        config.ca_file = ca_file or config.ca_file
        config.ca_data = ca_data or config.ca_data
        config.insecure = config.insecure or not verify
        config.cert_file = cert_file or config.cert_file
        config.key_file = key_file or config.key_file
        self.config = config
        self._tempfiles = config.tempfiles
        self.server = config.server.rstrip("/")
        self.limiter = RateLimiter(qps, burst or max(1, int(qps)))
        self._headers = {"Accept": "application/json", "User-Agent": "drasched"}
        if config.token_source is None and config.username is not None:
            basic = base64.b64encode(f"{config.username}:{config.password or ''}".encode()).decode()
            self._headers["Authorization"] = f"Basic {basic}"
        self._timeout = timeout
        self.page_size = page_size
        if transport is None:
            tls: ssl.SSLContext | None = None
            if self.server.startswith("https://"):
                tls = _ssl_context(config.ca_file, config.ca_data, not config.insecure, config.cert_file,
                                   config.key_file)
            if config.tls_server_name:
                # the name the serving certificate is checked against (SNI too): libcurl cannot
                # check the certificate against another name than the URL's, urllib3 can
                transport = Urllib3Transport(self.server, tls, config.tls_server_name)
            else:
                transport = CurlTransport(self.server, ca_file=config.ca_file, ca_data=config.ca_data,
                                          insecure=config.insecure, cert_file=config.cert_file,
                                          key_file=config.key_file)
        self._transport = transport

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None, **kwargs: Any) -> KubeStore:
        """Connect as client-go would: ``path``, else ``KUBECONFIG``, else ``~/.kube/config``,
        else the pod's in-cluster ServiceAccount (:mod:`drasched.store.credentials`)."""
        return cls(config=load_client_config(path, context), **kwargs)

    # -- plumbing -------------------------------------------------------------------------

    def _authorized(self, method: str, path: str, params: dict[str, Any] | None, content: bytes | None,
                    content_type: str, send: Callable[[Request], Response]) -> Response:
        """Send with the current credentials; after a 401 from a token that may have rotated,
        once more with a fresh one."""
        headers = dict(self._headers)
        if content is not None:
            headers["Content-Type"] = content_type
        source = self.config.token_source
        token = source.token() if source is not None else None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        url = with_query(path, params)
        try:
            resp = send(Request(method, url, headers, content))
            if resp.status == 401 and source is not None and source.invalidate():
                token = source.token()
                if token:
                    headers["Authorization"] = f"Bearer {token}"
                    resp = send(Request(method, url, headers, content))
        except NoAnswer as exc:
            # A reset or refused connection is one failed request, as an HTTP error is: callers
            # retry ApiErrors; a raw transport error would end the thread (the lease renewal, an
            # event writer) that met it. A write cut this way may still have been applied.
            raise ApiError(f"{method} {path}: no answer from the API server: {exc}", code=503,
                           reason="ServiceUnavailable") from exc
        return resp

    def _request(
        self,
        method: str,
        path: str,
        params: dict[str, Any] | None = None,
        body: Obj | None = None,
        content_type: str = "application/json",
    ) -> Response:
        content = None if body is None else _encode(body)
        self.limiter.wait()
        resp = self._authorized(method, path, params, content, content_type,
                                lambda req: self._transport.send(req, self._timeout))
        _raise_for(resp)
        return resp

    def request(self, method: str, path: str, body: Obj | None = None, params: dict[str, Any] | None = None) -> Obj:
        """A raw JSON request for what the contract does not cover (CRDs, discovery)."""
        resp = self._request(method, path, params, body)
        return resp.json() if resp.content else {}

    @staticmethod
    def _with_kind(rt: ResourceType, item: Obj) -> Obj:
        """List items come back without apiVersion/kind; put them back (wire form everywhere)."""
        item.setdefault("apiVersion", rt.api_version)
        item.setdefault("kind", rt.kind)
        return item

    @staticmethod
    def _namespace(rt: ResourceType, obj: Obj) -> str | None:
        if not rt.namespaced:
            return None
        return _meta(obj).get("namespace") or "default"

    @staticmethod
    def _require_name(obj: Obj) -> str:
        name = _meta(obj).get("name")
        if not name:
            raise BadRequest("resource name may not be empty")
        return str(name)

    # -- the contract ---------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """POST the object (``generateName`` is honoured by the server)."""
        rt = kinds.for_object(obj)
        resp = self._request("POST", rt.api_path(self._namespace(rt, obj)), STRICT, obj)
        return self._with_kind(rt, resp.json())

    def get(self, rt: ResourceType, name: str, namespace: str | None = None) -> Obj:
        resp = self._request("GET", rt.api_path(namespace if rt.namespaced else None, name))
        return self._with_kind(rt, resp.json())

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListResult:
        """A consistent list, paged with ``limit``/``continue`` (one snapshot across pages)."""
        params: dict[str, Any] = {"limit": self.page_size}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        path = rt.api_path(namespace if rt.namespaced else None)
        items: list[Obj] = []
        rv = ""
        while True:
            body = self._request("GET", path, params).json()
            meta = body.get("metadata") or {}
            rv = rv or meta.get("resourceVersion", "")
            items.extend(self._with_kind(rt, item) for item in body.get("items") or [])
            cont = meta.get("continue")
            if not cont:
                return ListResult(items, rv)
            params["continue"] = cont

    def update(self, obj: Obj) -> Obj:
        rt = kinds.for_object(obj)
        name = self._require_name(obj)
        resp = self._request("PUT", rt.api_path(self._namespace(rt, obj), name), STRICT, obj)
        return self._with_kind(rt, resp.json())

    def update_status(self, obj: Obj) -> Obj:
        rt = kinds.for_object(obj)
        if not rt.has_status:
            raise BadRequest(f"{rt.kind} has no status subresource")
        name = self._require_name(obj)
        path = rt.api_path(self._namespace(rt, obj), name) + "/status"
        resp = self._request("PUT", path, STRICT, obj)
        return self._with_kind(rt, resp.json())

    def patch(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None,
        patch: Obj,
        subresource: str | None = None,
    ) -> Obj:
        path = rt.api_path(namespace if rt.namespaced else None, name)
        if subresource:
            path += f"/{subresource}"
        resp = self._request("PATCH", path, STRICT, patch, "application/merge-patch+json")
        return self._with_kind(rt, resp.json())

    def delete(
        self,
        rt: ResourceType,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> Obj | None:
        """DELETE with background propagation; the object if it stays, else None.

        The server answers 200 either way (a Status, or for some kinds the deleted object),
        so "stays" is read off the answer: finalizers left, or a pod's graceful
        termination pending (``deletionGracePeriodSeconds`` > 0: a kubelet must finish it).
        """
        options: Obj = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        pre = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if pre:
            options["preconditions"] = pre
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        path = rt.api_path(namespace if rt.namespaced else None, name)
        body = self._request("DELETE", path, None, options).json()
        if body.get("kind") == "Status":
            return None
        md = body.get("metadata") or {}
        if md.get("finalizers") or (md.get("deletionGracePeriodSeconds") or 0) > 0:
            return self._with_kind(rt, body)
        return None

    def bind(self, namespace: str, pod_name: str, node_name: str, pod_uid: str | None = None) -> None:
        """POST a v1 Binding; the server refuses (409) a pod that already has a node."""
        meta: Obj = {"name": pod_name, "namespace": namespace}
        if pod_uid:
            meta["uid"] = pod_uid
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        self._request("POST", kinds.POD.api_path(namespace, pod_name) + "/binding", STRICT, binding)

    def evict(self, namespace: str, name: str, *, uid: str | None = None) -> None:
        """POST a policy/v1 Eviction to ``pods/<name>/eviction``; 429 when a budget forbids it."""
        eviction: Obj = {"apiVersion": "policy/v1", "kind": "Eviction",
                         "metadata": {"name": name, "namespace": namespace}}
        if uid:
            eviction["deleteOptions"] = {"preconditions": {"uid": uid}}
        self._request("POST", kinds.POD.api_path(namespace, name) + "/eviction", STRICT, eviction)

    def watch(
        self,
        rt: ResourceType,
        resource_version: str,
        namespace: str | None = None,
        timeout_seconds: float = 1.0,
    ) -> Iterator[WatchEvent]:
        """Stream events after ``resource_version`` for about ``timeout_seconds``.

        The server ends the stream at ``timeoutSeconds`` (whole seconds, rounded up); a
        read that waits longer than that also ends it, so the iterator never hangs.
        A 410, as HTTP status or as an ERROR event, raises ``Gone``.
        """
        seconds = max(1, math.ceil(timeout_seconds))
        params = {
            "watch": "1",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": str(seconds),
        }
        path = rt.api_path(namespace if rt.namespaced else None)
        resp = self._authorized("GET", path, params, None, "", lambda req: self._transport.stream(
            req, self._timeout, seconds + 5.0))
        _raise_for(resp)
        lines = resp.lines if resp.lines is not None else iter(())
        try:
            for line in lines:
                if not line.strip():
                    continue
                event = _decode(line)
                etype = event.get("type")
                obj = event.get("object") or {}
                if etype == "ERROR":
                    obj.setdefault("code", 500)
                    err = from_status(obj)
                    if isinstance(err, Gone) or err.code == 410:
                        raise Gone(err.message)
                    raise err
                if etype not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
                    raise ApiError(f"unexpected watch event type {etype!r}")
                if etype != "BOOKMARK":
                    self._with_kind(rt, obj)
                yield WatchEvent(etype, obj)
        except ReadTimeout:
            return
        except NoAnswer as exc:  # the stream was cut: as for any request, an ApiError the caller retries
            raise ApiError(f"GET {path} (watch): the stream ended early: {exc}", code=503,
                           reason="ServiceUnavailable") from exc
        finally:
            close = getattr(lines, "close", None)
            if close is not None:  # stop reading: the connection is closed, not handed back mid-stream
                close()

    def close(self) -> None:
        self._transport.close()
        for path in self._tempfiles:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._tempfiles.clear()

    def __enter__(self) -> KubeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
