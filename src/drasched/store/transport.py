"""HTTP for :class:`~drasched.store.kube.KubeStore`: libcurl (:class:`CurlTransport`), or urllib3.

Client CPU per request is what this module is about: ``drasched serve`` makes about a dozen
requests per pod on threads that share one GIL with the scheduler. Measured with
``python -m tests.bench.bench_client --requests`` (BENCHMARKS.md): httpx 1.3-1.4 ms, urllib3
0.8-0.9 ms, libcurl 0.2-0.5 ms. :class:`Urllib3Transport` stays for the one thing libcurl
cannot do here, checking the server's certificate against a name other than the URL's
(a kubeconfig's ``tls-server-name``). A transport knows nothing of Kubernetes: it sends bytes and answers
:class:`Response` objects or raises :class:`NoAnswer`; ``KubeStore`` owns paths, JSON,
authentication and the mapping of answers to API errors.

:class:`MockTransport` answers from a function instead of a server (the unit tests).
"""

from __future__ import annotations

import contextlib
import io
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit

import msgspec
import urllib3
from urllib3.exceptions import HTTPError, ReadTimeoutError

POOL_SIZE = 96
"""Connections kept alive: a watch per kind (``drasched serve`` keeps about a dozen open) plus
the binder's and controllers' parallel writers; one closed for lack of a slot costs a new TLS
handshake on the next request."""

_decode = msgspec.json.decode


class NoAnswer(Exception):
    """The request got no HTTP answer: connection refused or reset, timeout, TLS failure.
    A write cut this way may still have been applied."""


class ReadTimeout(NoAnswer):
    """A streamed answer (a watch) sent nothing for longer than its read timeout."""


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    """Path and query string, e.g. ``/api/v1/pods?limit=500``."""
    headers: dict[str, str]
    content: bytes | None = None

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    @property
    def params(self) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.url).query))


@dataclass
class Response:
    status: int
    content: bytes = b""
    reason: str = ""
    lines: Iterator[bytes] | None = field(default=None, repr=False)
    """A streamed answer's body, line by line (:meth:`Transport.stream`)."""

    @property
    def is_success(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as plain dicts and lists (msgspec: about twice as fast as ``json``)."""
        return _decode(self.content)


class Transport(Protocol):
    def send(self, request: Request, timeout: float) -> Response:
        """One request, the whole answer read."""
        ...

    def stream(self, request: Request, timeout: float, read_timeout: float) -> Response:
        """One request whose answer's body is read line by line from ``Response.lines`` (a
        watch); :meth:`Response.lines` raises :class:`ReadTimeout` after ``read_timeout``
        seconds without data. Close the iterator (or exhaust it) to free the connection."""
        ...

    def close(self) -> None: ...


def with_query(path: str, params: dict[str, Any] | None) -> str:
    return f"{path}?{urlencode(params)}" if params else path


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Newline-delimited records from a chunked body (the watch protocol: one JSON event a line)."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from complete
    if pending:
        yield pending


class Urllib3Transport:
    """A keep-alive pool to one API server; safe to share between threads."""

    def __init__(self, server: str, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None, pool_size: int = POOL_SIZE) -> None:
        parts = urlsplit(server)
        kw: dict[str, Any] = {"maxsize": pool_size, "block": False, "retries": False}
        if parts.scheme == "https":
            kw.update(ssl_context=ssl_context, server_hostname=server_hostname)
        self._pool = urllib3.connection_from_url(server, **kw)
        self._prefix = parts.path.rstrip("/")  # a server URL with a path (behind a proxy)

    def send(self, request: Request, timeout: float) -> Response:
        try:
            resp = self._pool.urlopen(request.method, self._prefix + request.url, body=request.content,
                                      headers=request.headers, timeout=urllib3.Timeout(timeout), redirect=False,
                                      assert_same_host=False)
        except HTTPError as exc:
            raise NoAnswer(repr(exc)) from exc
        return Response(resp.status, resp.data, resp.reason or "")

    def stream(self, request: Request, timeout: float, read_timeout: float) -> Response:
        try:
            resp = self._pool.urlopen(request.method, self._prefix + request.url, headers=request.headers,
                                      timeout=urllib3.Timeout(connect=timeout, read=read_timeout),
                                      preload_content=False, redirect=False, assert_same_host=False)
        except HTTPError as exc:
            raise NoAnswer(repr(exc)) from exc
        if not 200 <= resp.status < 300:
            data = resp.read()
            resp.release_conn()
            return Response(resp.status, data, resp.reason or "")

        def chunks() -> Iterator[bytes]:
            finished = False
            try:
                yield from resp.stream(65536)
                finished = True
            except ReadTimeoutError as exc:
                raise ReadTimeout(repr(exc)) from exc
            except HTTPError as exc:
                raise NoAnswer(repr(exc)) from exc
            finally:
                if not finished:  # left mid-stream: the connection holds unread data, never reuse it
                    resp.close()
                resp.release_conn()

        return Response(resp.status, reason=resp.reason or "", lines=_lines(chunks()))

    def close(self) -> None:
        self._pool.close()


class CurlTransport:
    """Requests through libcurl (pycurl), one kept-alive handle per thread; a watch on a handle of its own.

    Why: a request's client CPU here was 0.20 ms (GET) and 0.32 ms (POST) through libcurl
    against 0.58 and 0.70 ms through urllib3, whose ``http.client`` parses each answer's
    headers with the ``email`` package (BENCHMARKS.md); ``drasched serve`` sends about a
    dozen requests per pod, on threads that share one GIL with the scheduler, and libcurl
    does its I/O and TLS without holding it. A watch (:meth:`stream`) is driven by a
    ``CurlMulti`` from the thread that reads it, so a quiet watch costs nothing but a wait.
    """

    def __init__(self, server: str, *, ca_file: str | None = None, ca_data: str | None = None,
                 insecure: bool = False, cert_file: str | None = None, key_file: str | None = None) -> None:
        import pycurl

        self._pycurl = pycurl
        parts = urlsplit(server)
        self._base = server.rstrip("/")
        self._https = parts.scheme == "https"
        self._tls = (ca_file, ca_data, insecure, cert_file, key_file)
        self._local = threading.local()
        self._handles: list[Any] = []
        self._lock = threading.Lock()

    def _new_handle(self) -> Any:
        pycurl = self._pycurl
        cu = pycurl.Curl()
        cu.setopt(pycurl.NOSIGNAL, 1)  # timeouts without signals: safe in threads
        cu.setopt(pycurl.PROXY, "")  # as urllib3 here: no proxy from the environment
        cu.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        if self._https:
            ca_file, ca_data, insecure, cert_file, key_file = self._tls
            if ca_file:
                cu.setopt(pycurl.CAINFO, ca_file)
            if ca_data:
                cu.setopt(pycurl.CAINFO_BLOB, ca_data.encode())
            if insecure:
                cu.setopt(pycurl.SSL_VERIFYPEER, 0)
                cu.setopt(pycurl.SSL_VERIFYHOST, 0)
            if cert_file:
                cu.setopt(pycurl.SSLCERT, cert_file)
                cu.setopt(pycurl.SSLKEY, key_file or cert_file)
        return cu

    def _handle(self) -> Any:
        cu = getattr(self._local, "curl", None)
        if cu is None:
            cu = self._local.curl = self._new_handle()
            with self._lock:
                self._handles.append(cu)
        return cu

    def send(self, request: Request, timeout: float) -> Response:
        pycurl = self._pycurl
        cu = self._handle()
        body = io.BytesIO()
        cu.setopt(pycurl.URL, self._base + request.url)
        # "Expect:" off: libcurl would wait for a 100 Continue before a body over 1 KiB
        cu.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in request.headers.items()] + ["Expect:"])
        if request.content is not None:
            cu.setopt(pycurl.POSTFIELDS, request.content)
        else:
            cu.setopt(pycurl.HTTPGET, 1)
        cu.setopt(pycurl.CUSTOMREQUEST, request.method)
        cu.setopt(pycurl.WRITEDATA, body)
        cu.setopt(pycurl.TIMEOUT_MS, max(1, int(timeout * 1000)))
        try:
            cu.perform()
        except pycurl.error as exc:
            raise NoAnswer(f"{request.method} {request.path}: {exc.args[-1]}") from exc
        status = int(cu.getinfo(pycurl.RESPONSE_CODE))
        return Response(status, body.getvalue(), _reason(status))

    def stream(self, request: Request, timeout: float, read_timeout: float) -> Response:
        """A watch: one handle of its own driven by a ``CurlMulti`` from the reading thread, so
        the body arrives in whatever chunks libcurl read and this thread only splits lines."""
        pycurl = self._pycurl
        cu = self._new_handle()
        multi = pycurl.CurlMulti()
        body = bytearray()
        cu.setopt(pycurl.URL, self._base + request.url)
        cu.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in request.headers.items()])
        cu.setopt(pycurl.CUSTOMREQUEST, request.method)
        state = _CurlStream(self._pycurl, multi, cu, body, read_timeout)
        cu.setopt(pycurl.WRITEFUNCTION, state.write)
        cu.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, int(timeout * 1000)))
        multi.add_handle(cu)
        try:
            status = state.wait_for_status()
        except BaseException:
            state.close()
            raise
        if not 200 <= status < 300:
            try:
                state.drain()
                data = bytes(body)
            finally:
                state.close()
            return Response(status, data, _reason(status))
        return Response(status, reason=_reason(status), lines=state.lines())

    def close(self) -> None:
        """Close every kept-alive handle. One that a thread still drives (a request in flight
        as serve shuts down) cannot be closed under it; libcurl frees it with its thread."""
        with self._lock:
            handles, self._handles = self._handles, []
        for cu in handles:
            with contextlib.suppress(self._pycurl.error):  # "cannot invoke close() - perform() is currently running"
                cu.close()


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


class _CurlStream:
    """One streamed answer read through ``CurlMulti``: status first, then the body line by line."""

    def __init__(self, pycurl: Any, multi: Any, curl: Any, body: bytearray, read_timeout: float) -> None:
        self.pycurl, self.multi, self.curl, self.body = pycurl, multi, curl, body
        self.read_timeout = read_timeout
        self.running = True
        self.received = 0
        """Bytes read so far: what tells a quiet stream from a busy one."""

    def write(self, chunk: bytes) -> None:
        self.body.extend(chunk)
        self.received += len(chunk)

    def _step(self, wait: float) -> None:
        """Let libcurl read what came; wait up to ``wait`` seconds for more when nothing did."""
        pycurl = self.pycurl
        while True:
            ret, active = self.multi.perform()
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                break
        if active == 0:
            self.running = False
            _, _, failed = self.multi.info_read()
            if failed:
                _, errno, message = failed[0]
                raise NoAnswer(f"curl error {errno}: {message}")
            return
        self.multi.select(wait)

    def wait_for_status(self) -> int:
        deadline = time.monotonic() + self.read_timeout
        while True:
            status = int(self.curl.getinfo(self.pycurl.RESPONSE_CODE))
            if status or not self.running:
                if not status:
                    raise NoAnswer("the stream ended before an answer")
                return status
            if time.monotonic() >= deadline:
                raise ReadTimeout(f"no answer in {self.read_timeout} s")
            self._step(min(1.0, max(0.0, deadline - time.monotonic())))

    def drain(self) -> None:
        deadline = time.monotonic() + self.read_timeout
        while self.running and time.monotonic() < deadline:
            self._step(0.1)

    def lines(self) -> Iterator[bytes]:
        try:
            last, seen = time.monotonic(), -1
            while True:
                if self.received != seen:
                    last, seen = time.monotonic(), self.received
                if b"\n" in self.body:
                    *complete, rest = bytes(self.body).split(b"\n")
                    self.body[:] = rest
                    yield from complete
                if not self.running:
                    if self.body:
                        yield bytes(self.body)
                    return
                idle = time.monotonic() - last
                if idle >= self.read_timeout:
                    raise ReadTimeout(f"nothing read for {self.read_timeout} s")
                self._step(min(1.0, self.read_timeout - idle))
        finally:
            self.close()

    def close(self) -> None:
        if self.curl is None:
            return
        self.multi.remove_handle(self.curl)
        self.curl.close()
        self.multi.close()
        self.curl = None


class MockTransport:
    """Answers every request with ``handler(request)``; a streamed answer's lines are the
    content split at newlines. The handler may raise :class:`NoAnswer`."""

    def __init__(self, handler: Callable[[Request], Response]) -> None:
        self.handler = handler

    def send(self, request: Request, timeout: float) -> Response:
        return self.handler(request)

    def stream(self, request: Request, timeout: float, read_timeout: float) -> Response:
        resp = self.handler(request)
        if resp.is_success and resp.lines is None:
            resp.lines = iter(resp.content.splitlines())
        return resp

    def close(self) -> None:
        pass


def json_response(status: int, body: Any) -> Response:
    """A JSON answer (tests)."""
    return Response(status, msgspec.json.encode(body))
