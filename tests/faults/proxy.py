"""A TLS proxy between ``drasched serve`` and the API server that delays or fails writes.

Threaded, one thread per connection; reads (GET, watches included) pass through as a
stream. Of the writes (POST, PUT, PATCH, DELETE) a seeded fraction is delayed, answered
500 or 429 without reaching the server, cut with a connection reset before it reaches the
server, or (the hardest case for idempotence) forwarded and then cut before the answer
reaches the client: the write happened, the client cannot know. It serves the cluster's
own certificate (valid for 127.0.0.1), so the client's kubeconfig differs only in port.
"""

from __future__ import annotations

import random
import socket
import ssl
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

WRITES = ("POST", "PUT", "PATCH", "DELETE")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}


class FaultProxy:
    """``url`` forwards to ``upstream``; ``counts`` says what each write met."""

    def __init__(self, upstream: str, pki: Path, seed: int, fault_rate: float = 0.2,
                 max_delay: float = 1.0) -> None:
        self.upstream = upstream
        self.rng = random.Random(seed)
        self.fault_rate = fault_rate
        self.max_delay = max_delay
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._streams: set[tuple[BaseHTTPRequestHandler, httpx.Response]] = set()
        self._watches_open = threading.Event()
        self._watches_open.set()
        self._client = httpx.Client(verify=ssl.create_default_context(cafile=str(pki / "ca.crt")),
                                    timeout=httpx.Timeout(30.0, read=None), limits=httpx.Limits(max_connections=200))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                proxy._handle(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(str(pki / "serving.crt"), str(pki / "serving.key"))
        self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="fault-proxy")

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def _pick(self, method: str) -> str:
        if method not in WRITES:
            return "pass"
        with self._lock:
            if self.rng.random() >= self.fault_rate:
                fault = "pass"
            else:
                fault = self.rng.choice(("delay", "500", "429", "reset", "reset-after-write"))
            self.counts[fault] += 1
            return fault

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        if len(body) < length:  # the connection was cut while the request came in
            _reset(h)
            return
        if "watch=" in h.path:
            self._watches_open.wait(timeout=60.0)  # held by hold_watches()
        fault = self._pick(h.command)
        if fault == "delay":
            time.sleep(self.rng.uniform(0.05, self.max_delay))
        elif fault in ("500", "429"):
            code = int(fault)
            payload = (b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected by the fault proxy",'
                       b'"reason":"' + (b"TooManyRequests" if code == 429 else b"InternalError") + b'","code":'
                       + fault.encode() + b"}")
            h.send_response(code)
            h.send_header("Content-Type", "application/json")
            if code == 429:
                h.send_header("Retry-After", "1")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        elif fault == "reset":
            _reset(h)
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP_BY_HOP | {"host"}}
        try:
            with self._client.stream(h.command, self.upstream + h.path, headers=headers, content=body) as resp:
                if fault == "reset-after-write":
                    resp.read()
                    _reset(h)
                    return
                h.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in HOP_BY_HOP:
                        h.send_header(k, v)
                h.send_header("Transfer-Encoding", "chunked")
                h.end_headers()
                stream = (h, resp)
                watch = "watch=" in h.path  # only watches are cut by cut_streams
                if watch:
                    with self._lock:
                        self._streams.add(stream)
                try:
                    for chunk in resp.iter_raw():
                        if chunk:
                            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            h.wfile.flush()
                    h.wfile.write(b"0\r\n\r\n")
                finally:
                    with self._lock:
                        self._streams.discard(stream)
        except (httpx.HTTPError, OSError, ValueError):
            _reset(h)

    def open_streams(self) -> int:
        with self._lock:
            return len(self._streams)

    def hold_watches(self) -> None:
        """New watch requests wait until :meth:`release_watches` (the server is "away"): a
        client cut off meanwhile cannot resume before what the test does next."""
        self._watches_open.clear()

    def release_watches(self) -> None:
        self._watches_open.set()

    def cut_streams(self) -> int:
        """Reset every open watch stream, as a restarted load
        balancer would; returns how many. Each client watch then resumes from its last
        resourceVersion."""
        with self._lock:
            streams = list(self._streams)
        for h, resp in streams:
            _reset(h)
            resp.close()
        return len(streams)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """A connection the proxy reset itself ends its handler with an error: expected."""


def _reset(h: BaseHTTPRequestHandler) -> None:
    """Close the client's connection with a TCP RST (SO_LINGER 0), as a crashed peer would."""
    h.close_connection = True
    try:
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # shutdown acts on the socket at once; close alone waits for the handler's files
        h.connection.shutdown(socket.SHUT_RDWR)
        h.connection.close()
    except OSError:
        pass
