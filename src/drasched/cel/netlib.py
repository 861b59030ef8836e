"""IP addresses, CIDR prefixes and URLs as the Kubernetes CEL IP, CIDR and URLs libraries see them.

k8s.io/apiserver/pkg/cel/library (ip.go, cidr.go, urls.go) wraps Go's net/netip and net/url,
and selectors taken from upstream rely on their exact acceptance and error text (Python's
ipaddress accepts leading-zero octets and zones differently; urllib.parse never fails). So the
parsers and printers those libraries reach are ported here: netip.ParseAddr, ParsePrefix and
Addr.String; url.Parse, ParseRequestURI, URL.String, EscapedPath, Hostname, Port and Query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = ["CIDR", "IP", "URL", "NetError", "go_quote", "parse_cidr", "parse_ip", "parse_url"]


class NetError(ValueError):
    """A value the library refuses, with upstream's message."""


def go_quote(s: str) -> str:
    """Go's strconv.Quote (the %q of upstream's messages)."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _QUOTE_ESC:
            out.append(_QUOTE_ESC[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


_QUOTE_ESC: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}

# ------------------------------------------------------------------------------ net/netip


@dataclass(frozen=True)
class _Addr:
    """netip.Addr: a 32- or 128-bit value, and a zone (IPv6 only)."""

    value: int
    bits: int  # 32 or 128
    zone: str = ""

    def is4in6(self) -> bool:
        return self.bits == 128 and self.value >> 32 == 0xFFFF

    def string(self) -> str:
        if self.bits == 32:
            return ".".join(str((self.value >> s) & 0xFF) for s in (24, 16, 8, 0))
        if self.is4in6():
            return "::ffff:" + _Addr(self.value & 0xFFFFFFFF, 32).string()
        groups = [(self.value >> (112 - 16 * i)) & 0xFFFF for i in range(8)]
        start, end = 255, 255
        i = 0
        while i < 8:  # the longest run of two or more zero groups, the first of equals
            j = i
            while j < 8 and groups[j] == 0:
                j += 1
            if j - i >= 2 and j - i > end - start:
                start, end = i, j
            i += 1
        i = 0
        out = ""
        while i < 8:
            if i == start:
                out += "::"
                i = end
                if i >= 8:
                    break
            elif i > 0:
                out += ":"
            out += f"{groups[i]:x}"
            i += 1
        return out + ("%" + self.zone if self.zone else "")


def _addr_error(s: str, msg: str, at: str = "") -> NetError:
    if at:
        return NetError(f"ParseAddr({go_quote(s)}): {msg} (at {go_quote(at)})")
    return NetError(f"ParseAddr({go_quote(s)}): {msg}")


def _parse_addr(s: str) -> _Addr:
    """netip.ParseAddr."""
    for ch in s:
        if ch == ".":
            return _Addr(_parse_v4_fields(s, 0, len(s)), 32)
        if ch == ":":
            return _parse_v6(s)
        if ch == "%":
            raise _addr_error(s, "missing IPv6 address")
    raise _addr_error(s, "unable to parse IP")


def _parse_v4_fields(src: str, off: int, end: int) -> int:
    s = src[off:end]
    val = pos = dig = 0
    out = 0
    for i, ch in enumerate(s):
        if "0" <= ch <= "9":
            if dig == 1 and val == 0:
                raise _addr_error(src, "IPv4 field has octet with leading zero")
            val = val * 10 + ord(ch) - 48
            dig += 1
            if val > 255:
                raise _addr_error(src, "IPv4 field has value >255")
        elif ch == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _addr_error(src, "IPv4 field must have at least one digit", s[i:])
            if pos == 3:
                raise _addr_error(src, "IPv4 address too long")
            out = out << 8 | val
            pos += 1
            val = dig = 0
        else:
            raise _addr_error(src, "unexpected character", s[i:])
    if pos < 3:
        raise _addr_error(src, "IPv4 address too short")
    return out << 8 | val


_HEX: Final = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}


def _parse_v6(src: str) -> _Addr:
    s = src
    zone = ""
    pct = s.find("%")
    if pct >= 0:
        s, zone = s[:pct], s[pct + 1 :]
        if not zone:
            raise _addr_error(src, "zone must be a non-empty string")
    ip = [0] * 16
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis = 0
        s = s[2:]
        if not s:
            return _Addr(0, 128, zone)
    i = 0
    while i < 16:
        off = acc = 0
        while off < len(s):
            d = _HEX.get(s[off])
            if d is None:
                break
            acc = (acc << 4) + d
            if off > 3:
                raise _addr_error(src, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise _addr_error(src, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise _addr_error(src, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and i != 12:
                raise _addr_error(src, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if i + 4 > 16:
                raise _addr_error(src, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            end = len(src) - (len(zone) + 1 if zone else 0)
            v4 = _parse_v4_fields(src, end - len(s), end)
            ip[i : i + 4] = list(v4.to_bytes(4, "big"))
            s = ""
            i += 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _addr_error(src, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(src, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(src, "multiple :: in address", s)
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        raise _addr_error(src, "trailing garbage after address", s)
    if i < 16:
        if ellipsis < 0:
            raise _addr_error(src, "address string too short")
        n = 16 - i
        ip = ip[:ellipsis] + [0] * n + ip[ellipsis:i]
    elif ellipsis >= 0:
        raise _addr_error(src, "the :: must expand to at least one field of zeros")
    return _Addr(int.from_bytes(bytes(ip), "big"), 128, zone)


@dataclass(frozen=True)
class IP:
    """CEL ``net.IP`` (apiservercel.IP): an address without zone, never IPv4-mapped."""

    addr: _Addr

    @property
    def family(self) -> int:
        return 4 if self.addr.bits == 32 else 6

    def __str__(self) -> str:
        return self.addr.string()

    def is_unspecified(self) -> bool:
        return self.addr.value == 0

    def is_loopback(self) -> bool:
        a = self.addr
        return a.value >> 24 == 127 if a.bits == 32 else a.value == 1

    def is_multicast(self) -> bool:
        a = self.addr
        return a.value >> 28 == 0xE if a.bits == 32 else a.value >> 120 == 0xFF

    def is_link_local_multicast(self) -> bool:
        a = self.addr
        return a.value >> 8 == 0xE00000 if a.bits == 32 else (a.value >> 112) & 0xFF0F == 0xFF02

    def is_link_local_unicast(self) -> bool:
        a = self.addr
        return a.value >> 16 == 0xA9FE if a.bits == 32 else (a.value >> 112) & 0xFFC0 == 0xFE80

    def is_global_unicast(self) -> bool:
        a = self.addr
        if a.bits == 32 and a.value in (0, 0xFFFFFFFF):
            return False
        return a.value != 0 and not self.is_loopback() and not self.is_multicast() and not self.is_link_local_unicast()


def parse_ip(raw: str) -> IP:
    """library/ip.go parseIPAddr: netip.ParseAddr, refusing zones and IPv4-mapped IPv6."""
    try:
        addr = _parse_addr(raw)
    except NetError as e:
        raise NetError(f"IP Address {go_quote(raw)} parse error during conversion from string: {e}") from None
    if addr.zone:
        raise NetError(f"IP address {go_quote(raw)} with zone value is not allowed")
    if addr.is4in6():
        raise NetError(f"IPv4-mapped IPv6 address {go_quote(raw)} is not allowed")
    return IP(addr)


@dataclass(frozen=True)
class CIDR:
    """CEL ``net.CIDR`` (apiservercel.CIDR): netip.Prefix, the address kept unmasked."""

    addr: _Addr
    bits: int

    def __str__(self) -> str:
        return f"{self.addr.string()}/{self.bits}"

    def ip(self) -> IP:
        return IP(self.addr)

    def masked(self) -> CIDR:
        host = self.addr.bits - self.bits
        return CIDR(_Addr(self.addr.value >> host << host, self.addr.bits), self.bits)

    def contains(self, ip: IP) -> bool:
        """netip.Prefix.Contains (families must match)."""
        a = ip.addr
        if a.bits != self.addr.bits:
            return False
        host = a.bits - self.bits
        return (a.value ^ self.addr.value) >> host == 0

    def contains_cidr(self, other: CIDR) -> bool:
        """library/cidr.go cidrContainsCIDR: Overlaps and no longer a prefix."""
        if self.addr.bits != other.addr.bits:
            return False
        shortest = min(self.bits, other.bits)
        host = self.addr.bits - shortest
        overlaps = self.addr.value >> host == other.addr.value >> host
        return overlaps and self.bits <= other.bits


def parse_cidr(raw: str) -> CIDR:
    """library/cidr.go parseCIDR behind stringToCIDR (whose prefix upstream repeats)."""
    prefix = "network address parse error during conversion from string: "
    try:
        p = _parse_prefix(raw)
    except NetError as e:
        raise NetError(f"{prefix}{prefix}{e}") from None
    if p.addr.is4in6():
        raise NetError(f"{prefix}IPv4-mapped IPv6 address {go_quote(raw)} is not allowed")
    return p


def _parse_prefix(s: str) -> CIDR:
    """netip.ParsePrefix."""

    def err(msg: str) -> NetError:
        return NetError(f"netip.ParsePrefix({go_quote(s)}): {msg}")

    i = s.rfind("/")
    if i < 0:
        raise err("no '/'")
    try:
        addr = _parse_addr(s[:i])
    except NetError as e:
        raise err(str(e)) from None
    if addr.zone:
        raise err("IPv6 zones cannot be present in a prefix")
    bits_str = s[i + 1 :]
    bad = err("bad bits after slash: " + go_quote(bits_str))
    if len(bits_str) > 1 and not "1" <= bits_str[0] <= "9":
        raise bad
    body = bits_str[1:] if bits_str[:1] in ("+", "-") else bits_str
    if not body or not all("0" <= c <= "9" for c in body) or len(body) > 19:
        raise bad
    bits = int(bits_str)
    if bits > (1 << 63) - 1:
        raise bad
    if bits < 0 or bits > addr.bits:
        raise err("prefix length out of range")
    return CIDR(addr, bits)


# ------------------------------------------------------------------------------ net/url

_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY_COMPONENT, _FRAGMENT = range(7)


def _should_escape(c: int, mode: int) -> bool:
    """net/url shouldEscape (gen_encoding_table.go)."""
    ch = chr(c)
    if ch.isascii() and ch.isalnum():
        return False
    if mode in (_HOST, _ZONE) and ch in "!$&'()*+,;=:[]<>\"":
        return False
    if ch in "-_.~":
        return False
    if ch in "$&+,/:;=?@":
        if mode == _PATH:
            return ch == "?"
        if mode == _PATH_SEGMENT:
            return ch in "/;,?"
        if mode == _USER_PASSWORD:
            return ch in "@/?:"
        if mode == _QUERY_COMPONENT:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and ch in "!()*")


def _ishex(c: int) -> bool:
    return chr(c) in _HEX


def _unescape(s: bytes, mode: int) -> bytes:
    """net/url unescape."""
    n = 0
    has_plus = False
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:  # %
            n += 1
            if i + 2 >= len(s) or not _ishex(s[i + 1]) or not _ishex(s[i + 2]):
                raise NetError("invalid URL escape " + go_quote(_text(s[i : i + 3])))
            if mode == _HOST and _HEX[chr(s[i + 1])] < 8 and s[i : i + 3] != b"%25":
                raise NetError("invalid URL escape " + go_quote(_text(s[i : i + 3])))
            if mode == _ZONE:
                v = _HEX[chr(s[i + 1])] << 4 | _HEX[chr(s[i + 2])]
                if s[i : i + 3] != b"%25" and v != 0x20 and _should_escape(v, _HOST):
                    raise NetError("invalid URL escape " + go_quote(_text(s[i : i + 3])))
            i += 3
        elif c == 0x2B:  # +
            has_plus = mode == _QUERY_COMPONENT
            i += 1
        else:
            if mode in (_HOST, _ZONE) and c < 0x80 and _should_escape(c, mode):
                raise NetError("invalid character " + go_quote(chr(c)) + " in host name")
            i += 1
    if n == 0 and not has_plus:
        return s
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:
            out.append(_HEX[chr(s[i + 1])] << 4 | _HEX[chr(s[i + 2])])
            i += 2
        elif c == 0x2B:
            out.append(0x20 if mode == _QUERY_COMPONENT else 0x2B)
        else:
            out.append(c)
        i += 1
    return bytes(out)


def _escape(s: bytes, mode: int) -> bytes:
    """net/url escape."""
    out = bytearray()
    for c in s:
        if c == 0x20 and mode == _QUERY_COMPONENT:
            out.append(0x2B)
        elif _should_escape(c, mode):
            out += b"%" + f"{c:02X}".encode()
        else:
            out.append(c)
    return bytes(out)


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _valid_optional_port(port: bytes) -> bool:
    return not port or (port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:]))


def _valid_encoded(s: bytes, mode: int) -> bool:
    return all(chr(c) in "!$&'()*+,;=:@[]%" or not _should_escape(c, mode) for c in s)


_USERINFO_OK: Final = frozenset("-._:~!$&'()*+,;=%@")


@dataclass(frozen=True)
class URL:
    """CEL ``kubernetes.URL`` (apiservercel.URL wraps *url.URL); fields are Go's, as bytes."""

    scheme: bytes = b""
    opaque: bytes = b""
    user: tuple[bytes, bytes, bool] | None = None  # username, password, password set
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    omit_host: bool = False
    force_query: bool = False
    raw_query: bytes = b""
    fragment: bytes = b""
    raw_fragment: bytes = b""
    _cache: dict[str, str] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def escaped_path(self) -> bytes:
        if self.raw_path and _valid_encoded(self.raw_path, _PATH):
            try:
                if _unescape(self.raw_path, _PATH) == self.path:
                    return self.raw_path
            except NetError:
                pass
        if self.path == b"*":
            return b"*"
        return _escape(self.path, _PATH)

    def escaped_fragment(self) -> bytes:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, _FRAGMENT):
            try:
                if _unescape(self.raw_fragment, _FRAGMENT) == self.fragment:
                    return self.raw_fragment
            except NetError:
                pass
        return _escape(self.fragment, _FRAGMENT)

    def hostname(self) -> str:
        return _text(_split_host_port(self.host)[0])

    def port(self) -> str:
        return _text(_split_host_port(self.host)[1])

    def query(self) -> dict[str, list[str]]:
        """url.Values from ParseQuery (pairs that fail to parse are left out, as Go does)."""
        out: dict[str, list[str]] = {}
        q = self.raw_query
        if q.count(b"&") + 1 > 10_000:  # net/url's default urlmaxqueryparams
            return out
        for part in q.split(b"&") if q else []:
            if b";" in part or not part:
                continue
            k, _, v = part.partition(b"=")
            try:
                key, value = _unescape(k, _QUERY_COMPONENT), _unescape(v, _QUERY_COMPONENT)
            except NetError:
                continue
            out.setdefault(_text(key), []).append(_text(value))
        return out

    def string(self) -> str:
        """url.URL.String (what equality compares)."""
        cached = self._cache.get("s")
        if cached is not None:
            return cached
        buf = bytearray()
        if self.scheme:
            buf += self.scheme + b":"
        if self.opaque:
            buf += self.opaque
        else:
            authority = self.scheme or self.host or self.user is not None
            if authority and not (self.omit_host and not self.host and self.user is None):
                if self.host or self.path or self.user is not None:
                    buf += b"//"
                if self.user is not None:
                    name, password, has_password = self.user
                    buf += _escape(name, _USER_PASSWORD)
                    if has_password:
                        buf += b":" + _escape(password, _USER_PASSWORD)
                    buf += b"@"
                if self.host:
                    buf += _escape(self.host, _HOST)
            path = self.escaped_path()
            if path and path[:1] != b"/" and self.host:
                buf += b"/"
            if not buf and b":" in path.partition(b"/")[0]:
                buf += b"./"
            buf += path
        if self.force_query or self.raw_query:
            buf += b"?" + self.raw_query
        if self.fragment:
            buf += b"#" + self.escaped_fragment()
        text = _text(bytes(buf))
        self._cache["s"] = text
        return text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, URL):
            return NotImplemented
        return self.string() == other.string()

    def __hash__(self) -> int:
        return hash(self.string())


def _split_host_port(host: bytes) -> tuple[bytes, bytes]:
    port = b""
    colon = host.rfind(b":")
    if colon != -1 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith(b"[") and host.endswith(b"]"):
        host = host[1:-1]
    return host, port


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        ch = chr(c)
        if ch.isascii() and ch.isalpha():
            continue
        if ch.isascii() and (ch.isdigit() or ch in "+-."):
            if i == 0:
                return b"", raw
            continue
        if ch == ":":
            if i == 0:
                raise NetError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return b"", raw
    return b"", raw


def _parse_host(scheme: bytes, host: bytes) -> bytes:
    open_bracket = host.rfind(b"[")
    if open_bracket > 0:
        raise NetError("invalid IP-literal")
    if open_bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise NetError("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise NetError(f"invalid port {go_quote(_text(colon_port))} after host")
        colon_port = _unescape(colon_port, _HOST)
        hostname = host[1:close]
        zone_at = hostname.find(b"%25")
        if zone_at >= 0:
            unescaped = _unescape(hostname[:zone_at], _HOST) + _unescape(hostname[zone_at:], _ZONE)
        else:
            unescaped = _unescape(hostname, _HOST)
        try:
            addr = _parse_addr(_text(unescaped))
        except NetError as e:
            raise NetError(f"invalid host: {e}") from None
        if addr.bits == 32:
            raise NetError("invalid IP-literal")
        return b"[" + unescaped + b"]" + colon_port
    i = host.find(b":")
    if i != -1:
        last = host.rfind(b":")
        if last != i and scheme not in (b"http", b"https"):
            i = last  # Go 1.26 urlstrictcolons: only http(s) hosts must have a single colon
        colon_port = host[i:]
        if not _valid_optional_port(colon_port):
            raise NetError(f"invalid port {go_quote(_text(colon_port))} after host")
    return _unescape(host, _HOST)


def _parse(raw: bytes, via_request: bool) -> URL:
    """net/url parse."""
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise NetError("net/url: invalid control character in URL")
    if not raw and via_request:
        raise NetError("empty url")
    if raw == b"*":
        return URL(path=b"*")
    scheme, rest = _get_scheme(raw)
    scheme = scheme.lower()
    force_query = False
    raw_query = b""
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        force_query, rest = True, rest[:-1]
    else:
        rest, _, raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if scheme:
            return URL(scheme=scheme, opaque=rest, force_query=force_query, raw_query=raw_query)
        if via_request:
            raise NetError("invalid URI for request")
        if b":" in rest.partition(b"/")[0]:
            raise NetError("first path segment in URL cannot contain colon")
    user: tuple[bytes, bytes, bool] | None = None
    host = b""
    omit_host = False
    if (scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, rest = rest[2:], b""
        slash = authority.find(b"/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        at = authority.rfind(b"@")
        host = _parse_host(scheme, authority[at + 1 :] if at >= 0 else authority)
        if at >= 0:
            userinfo = authority[:at]
            if not all((chr(c).isascii() and chr(c).isalnum()) or chr(c) in _USERINFO_OK for c in userinfo):
                raise NetError("net/url: invalid userinfo")
            if b":" not in userinfo:
                user = (_unescape(userinfo, _USER_PASSWORD), b"", False)
            else:
                name, _, password = userinfo.partition(b":")
                user = (_unescape(name, _USER_PASSWORD), _unescape(password, _USER_PASSWORD), True)
    elif scheme and rest.startswith(b"/"):
        omit_host = True
    path = _unescape(rest, _PATH)
    raw_path = b"" if _escape(path, _PATH) == rest else rest
    return URL(scheme, b"", user, host, path, raw_path, omit_host, force_query, raw_query)


def parse_url(raw: str) -> URL:
    """library/urls.go stringToUrl: url.ParseRequestURI must accept, then url.Parse builds it."""
    data = raw.encode("utf-8", "surrogatepass")
    try:
        _parse(data, True)
    except NetError as e:
        raise NetError(f"URL parse error during conversion from string: parse {go_quote(raw)}: {e}") from None
    without_fragment, hash_, frag = data.partition(b"#")
    try:
        u = _parse(without_fragment, False)
        if hash_ and frag:
            fragment = _unescape(frag, _FRAGMENT)
            raw_fragment = b"" if _escape(fragment, _FRAGMENT) == frag else frag
            u = URL(u.scheme, u.opaque, u.user, u.host, u.path, u.raw_path, u.omit_host, u.force_query,
                    u.raw_query, fragment, raw_fragment)
    except NetError as e:  # pragma: no cover - Parse is more lenient than ParseRequestURI
        raise NetError(f"URL parse error during conversion from string: parse {go_quote(raw)}: {e}") from None
    return u
