"""CurlTransport against a loopback HTTP server: what is sent, what comes back, what fails."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from drasched.store.transport import CurlTransport, NoAnswer, ReadTimeout, Request

Seen = list[tuple[str, str, dict[str, str], bytes]]


@pytest.fixture
def server() -> Iterator[tuple[str, Seen]]:
    seen: Seen = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the API server

        def _answer(self) -> None:
            if self.path.startswith("/stream"):
                return self._stream()
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen.append((self.command, self.path, dict(self.headers), body))
            if self.path.startswith("/slow"):
                time.sleep(1.0)  # a request still in flight when the transport closes
            status = 404 if self.path.startswith("/missing") else 200
            out = b'{"kind":"Status","code":404}' if status == 404 else b'{"echo":' + str(len(body)).encode() + b"}"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def _stream(self) -> None:
            """Three JSON lines in chunks that cut lines in two, then (``/stream-quiet``) silence."""
            seen.append((self.command, self.path, dict(self.headers), b""))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b'{"n":1}\n{"n"', b':2}\n', b'{"n":3}\n'):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            if self.path.startswith("/stream-quiet"):
                time.sleep(3)
            self.wfile.write(b"0\r\n\r\n")

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_each_method_sends_its_headers_and_body_and_gets_the_answer(server: tuple[str, Seen]) -> None:
    url, seen = server
    t = CurlTransport(url)
    big = b"x" * 5000  # over 1 KiB: libcurl would otherwise wait for a 100 Continue first
    try:
        assert t.send(Request("GET", "/api/v1/pods?limit=1", {"Accept": "application/json"}), 10).json() == {
            "echo": 0}
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            resp = t.send(Request(method, "/api/v1/x", {"Content-Type": "application/json"}, big), 10)
            assert resp.status == 200 and resp.json() == {"echo": len(big)}
        assert t.send(Request("GET", "/again", {}), 10).json() == {"echo": 0}  # no body left from before
    finally:
        t.close()
    assert [(m, p, b) for m, p, _, b in seen] == [
        ("GET", "/api/v1/pods?limit=1", b""), ("POST", "/api/v1/x", big), ("PUT", "/api/v1/x", big),
        ("PATCH", "/api/v1/x", big), ("DELETE", "/api/v1/x", big), ("GET", "/again", b"")]
    assert seen[0][2]["Accept"] == "application/json"
    assert "Expect" not in seen[1][2]


def test_an_error_status_is_an_answer_not_an_exception(server: tuple[str, Seen]) -> None:
    url, _ = server
    t = CurlTransport(url)
    try:
        resp = t.send(Request("GET", "/missing", {}), 10)
    finally:
        t.close()
    assert (resp.status, resp.reason, resp.json()) == (404, "Not Found", {"kind": "Status", "code": 404})


def test_no_server_is_no_answer() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = CurlTransport(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(NoAnswer):
            t.send(Request("GET", "/", {}), 5)
    finally:
        t.close()


def test_threads_share_one_transport_safely(server: tuple[str, Seen]) -> None:
    url, seen = server
    t = CurlTransport(url)
    results: list[int] = []

    def work() -> None:
        for _ in range(20):
            results.append(t.send(Request("GET", "/t", {}), 10).status)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    t.close()
    assert results == [200] * 80
    assert len(seen) == 80


def test_a_stream_yields_whole_lines_whatever_the_chunks(server: tuple[str, Seen]) -> None:
    url, _ = server
    t = CurlTransport(url)
    try:
        resp = t.stream(Request("GET", "/stream?watch=1", {"Accept": "application/json"}), 10, 10)
        assert resp.status == 200 and resp.lines is not None
        assert list(resp.lines) == [b'{"n":1}', b'{"n":2}', b'{"n":3}']
    finally:
        t.close()


def test_a_quiet_stream_ends_with_a_read_timeout(server: tuple[str, Seen]) -> None:
    url, _ = server
    t = CurlTransport(url)
    got: list[bytes] = []
    try:
        resp = t.stream(Request("GET", "/stream-quiet", {}), 10, 1.0)
        assert resp.lines is not None
        with pytest.raises(ReadTimeout):
            for line in resp.lines:
                got.append(line)
    finally:
        t.close()
    assert got == [b'{"n":1}', b'{"n":2}', b'{"n":3}']


def test_a_stream_refused_is_an_answer_with_its_body(server: tuple[str, Seen]) -> None:
    url, _ = server
    t = CurlTransport(url)
    try:
        resp = t.stream(Request("GET", "/missing", {}), 10, 10)
    finally:
        t.close()
    assert (resp.status, resp.lines, resp.json()) == (404, None, {"kind": "Status", "code": 404})


def test_closing_while_a_thread_is_mid_request_does_not_raise(server: tuple[str, Seen]) -> None:
    """serve closes its store as it exits; a thread may still be in a request then (CI: pycurl's
    "cannot invoke close() - perform() is currently running" ended serve with a traceback)."""
    url, _ = server
    t = CurlTransport(url)
    t.send(Request("GET", "/warm", {}), 10)  # this thread's handle exists
    answers: list[int] = []
    worker = threading.Thread(target=lambda: answers.append(t.send(Request("GET", "/slow", {}), 10).status))
    worker.start()
    deadline = time.monotonic() + 5
    while len(t._handles) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the worker is inside perform()
    t.close()
    worker.join()
    assert answers == [200]
