"""The transport's line splitting: watch events arrive in chunks that need not end at a line."""

from __future__ import annotations

from drasched.store.transport import MockTransport, Request, Response, _lines, with_query


def test_lines_are_whole_whatever_the_chunk_boundaries() -> None:
    chunks = [b'{"type":"ADD', b'ED"}\n{"type":"BOOK', b'MARK"}\n', b"", b'{"type":"DELETED"}']
    assert list(_lines(iter(chunks))) == [b'{"type":"ADDED"}', b'{"type":"BOOKMARK"}', b'{"type":"DELETED"}']


def test_query_strings_are_encoded() -> None:
    assert with_query("/api/v1/pods", {"labelSelector": "a in (x,y)", "limit": 500}) == \
        "/api/v1/pods?labelSelector=a+in+%28x%2Cy%29&limit=500"
    req = Request("GET", with_query("/api/v1/pods", {"continue": "tok=="}), {})
    assert (req.path, req.params) == ("/api/v1/pods", {"continue": "tok=="})


def test_a_mock_stream_yields_the_content_line_by_line() -> None:
    t = MockTransport(lambda r: Response(200, b"a\nb\n"))
    resp = t.stream(Request("GET", "/w", {}), 1.0, 1.0)
    assert resp.lines is not None and list(resp.lines) == [b"a", b"b"]
