"""HTTP for :class:`~drasched.store.kube.KubeStore`: one urllib3 connection pool, kept alive.

Why urllib3 and not httpx: a request through httpx cost 1.3-1.4 ms of client CPU here against
0.8-0.9 ms through urllib3 (``python -m tests.bench.bench_client --requests``, BENCHMARKS.md),
and ``drasched serve`` makes several requests per pod on threads that share one GIL with the
scheduler. The transport knows nothing of Kubernetes: it sends bytes and answers
:class:`Response` objects or raises :class:`NoAnswer`; ``KubeStore`` owns paths, JSON,
authentication and the mapping of answers to API errors.

:class:`MockTransport` answers from a function instead of a server (the unit tests).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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
