"""One endpoint policy for every command that opens a connection: parse, normalise, resolve once, judge.

archkit talks to loopback by default. A URL is judged by the address a client would actually
connect to, never by its spelling:

- every IPv4 form the C library's `inet_aton` accepts (and so `getaddrinfo` and every client
  built on it) is normalised first: `167772161`, `012.0.0.1` (octal), `0x7f000001`, `127.1`
  are 10.0.0.1, 10.0.0.1, 127.0.0.1 and 127.0.0.1;
- IPv6 literals are judged as such, IPv4-mapped ones (`[::ffff:10.0.0.1]`) as their IPv4 address;
- one trailing dot is dropped (`127.0.0.1.` is an address, not a name to look up);
- userinfo (`127.0.0.1@10.0.0.1`), fragments (`10.0.0.1#@127.0.0.1`), backslashes, percent
  signs, whitespace and control characters in the authority are refused outright: parsers
  disagree about them, and an API base URL never needs them;
- `localhost` and `*.localhost` are loopback without a lookup (RFC 6761 §6.3); with no
  allow-list, any other name is refused without a lookup, so not even a DNS query leaves;
- with an allow-list (addresses in any form above, CIDR networks, or host names), a name is
  resolved once and every address it resolves to must be loopback or allowed; the connection
  then goes to that judged address (`Endpoint.address`), so a second lookup cannot change it.

`open_url` is an HTTP opener on the same rule: every connection it makes (the first and each
redirect's) is judged and pinned to the judged address, redirects off the allowed set are
refused, and proxies from the environment are not used (a proxy would be a connection the
rule never saw).
"""

from __future__ import annotations

import functools
import http.client
import ipaddress
import re
import socket
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from archkit.errors import InputError

__all__ = [
    "AllowList",
    "Endpoint",
    "EndpointError",
    "allow_list",
    "is_loopback_url",
    "literal_address",
    "open_url",
    "opener",
    "parse_endpoint",
    "require_allowed",
]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

SCHEMES = {"http": 80, "https": 443}
# A dotted IPv4 form as inet_aton reads it: one to four parts, each decimal, octal (leading 0)
# or hexadecimal (0x). Anything else is a name.
_NUMERIC_V4 = re.compile(r"^(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}$")
_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*$")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f\\%]")
LOOPBACK_HINT = "loopback (127.0.0.0/8, ::1, localhost)"


class EndpointError(InputError, ValueError):
    """A URL that the endpoint policy refuses: malformed, or an address neither loopback nor allowed."""


@dataclass(frozen=True)
class Endpoint:
    """A URL as archkit will connect to it: normalised host, port, and (once judged) the address."""

    url: str  # as given
    scheme: str
    host: str  # lower case, no trailing dot, IPv6 without brackets, IPv4 in dotted quad
    port: int
    path: str  # path and query, "" for none
    address: Address | None = None  # the judged address; None for a name not yet resolved

    @property
    def netloc(self) -> str:
        """`address:port` to connect to (the judged address when known, else the host)."""
        where = str(self.address) if self.address is not None else self.host
        return f"[{where}]:{self.port}" if ":" in where else f"{where}:{self.port}"

    @property
    def authority(self) -> str:
        """`host:port` as normalised (a name stays a name: what TLS and a Host header need)."""
        return _netloc_of(self.host, self.port)

    @property
    def base(self) -> str:
        """The URL with its host replaced by the judged address: what a client should open."""
        return f"{self.scheme}://{self.netloc}{self.path}"

    @property
    def is_loopback(self) -> bool:
        return self.address is not None and self.address.is_loopback


def _refuse(url: str, why: str) -> EndpointError:
    return EndpointError(f"{url!r}: {why}")


def _unmapped(ip: Address) -> Address:
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return mapped if mapped is not None else ip


def literal_address(host: str) -> Address | None:
    """The address a literal host spells (every numeric IPv4 form, IPv6, IPv4-mapped); None for a name."""
    if ":" in host:
        try:
            return _unmapped(ipaddress.IPv6Address(host))
        except ValueError:
            return None
    if _NUMERIC_V4.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def parse_endpoint(url: str, default_scheme: str = "http") -> Endpoint:
    """Parse and normalise `url` (scheme optional); no lookup. Raises EndpointError when malformed."""
    if not isinstance(url, str) or not url.strip():
        raise _refuse(str(url), "an empty URL")
    text = url if "://" in url else f"{default_scheme}://{url}"
    scheme = text.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise _refuse(url, f"scheme {scheme!r} is not http or https")
    rest = text.split("://", 1)[1]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "#" in text:
        raise _refuse(url, "a fragment ('#') has no meaning for a server; remove it")
    if "@" in authority:
        raise _refuse(url, "credentials ('user@') in the URL are not accepted; remove them")
    if _BAD_CHARS.search(authority):
        raise _refuse(url, "the host holds whitespace, control characters, '%' or '\\'")
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _refuse(url, f"not a URL ({exc})") from None
    raw = parts.hostname or ""
    bracketed = authority.startswith("[")
    host = raw[:-1] if raw.endswith(".") and not bracketed else raw
    if not host:
        raise _refuse(url, "no host")
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    address = literal_address(host)
    if bracketed and (address is None or "%" in host):
        raise _refuse(url, "not an IPv6 address in brackets")
    if address is None and (_NUMERIC_V4.match(host) or ":" in host):
        raise _refuse(url, f"{host!r} is not a valid IP address")
    if address is None and not _NAME.match(host):
        raise _refuse(url, f"{host!r} is not a host name")
    if address is None and (host == "localhost" or host.endswith(".localhost")):
        address = ipaddress.IPv4Address("127.0.0.1")  # RFC 6761 §6.3: never looked up
    if address is not None:
        host = str(address)
    return Endpoint(url, scheme, host, port if port is not None else SCHEMES[scheme], path, address)


@dataclass(frozen=True)
class AllowList:
    """Non-loopback endpoints a command may reach: networks (an address is a /32 or /128) and names."""

    networks: tuple[Network, ...] = ()
    names: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.networks or self.names)

    def admits(self, address: Address) -> bool:
        return address.is_loopback or any(address in net for net in self.networks)

    def describe(self) -> str:
        items = [str(n) for n in self.networks] + list(self.names)
        return f"{LOOPBACK_HINT} or the allow-list ({', '.join(items)})" if items else LOOPBACK_HINT


def allow_list(entries: Iterable[str] | AllowList | None) -> AllowList:
    """An AllowList from entries such as `10.0.0.1`, `10.0.0.0/8`, `[fd00::1]`, `prom.example.com`.

    Entries may also be comma-separated. Raises EndpointError naming a malformed entry.
    """
    if isinstance(entries, AllowList):
        return entries
    networks: list[Network] = []
    names: list[str] = []
    for item in entries or ():
        for entry in (e.strip() for e in str(item).split(",")):
            if not entry:
                continue
            if "/" in entry:
                try:
                    networks.append(_unmapped_net(ipaddress.ip_network(entry.strip("[]"), strict=False)))
                except ValueError:
                    raise EndpointError(
                        f"allow-list entry {entry!r} is not a network (e.g. 10.0.0.0/8)"
                    ) from None
                continue
            try:
                ep = parse_endpoint(entry if entry.startswith("[") or ":" not in entry else f"[{entry}]")
            except EndpointError as exc:
                raise EndpointError(
                    f"allow-list entry {entry!r} is not an address or host name ({exc})"
                ) from None
            if ep.address is not None:
                networks.append(ipaddress.ip_network(ep.address))
            else:
                names.append(ep.host)
    return AllowList(tuple(networks), tuple(names))


def _unmapped_net(net: Network) -> Network:
    if isinstance(net, ipaddress.IPv6Network) and net.prefixlen >= 96:
        mapped = net.network_address.ipv4_mapped
        if mapped is not None:
            return ipaddress.IPv4Network(f"{mapped}/{net.prefixlen - 96}")
    return net


def _resolve(ep: Endpoint) -> list[Address]:
    """Every address `ep.host` resolves to (one lookup)."""
    try:
        infos = socket.getaddrinfo(ep.host, ep.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise _refuse(ep.url, f"cannot resolve {ep.host!r} ({exc})") from None
    found: list[Address] = []
    for info in infos:
        ip = _unmapped(ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]))
        if ip not in found:
            found.append(ip)
    if not found:
        raise _refuse(ep.url, f"{ep.host!r} resolves to no address")
    return found


def require_allowed(
    url: str, allow: Iterable[str] | AllowList | None = (), what: str = "endpoint", hint: str = ""
) -> Endpoint:
    """The endpoint `url` names, judged: loopback, or in `allow`; else EndpointError.

    With no allow-list a name other than localhost is refused without a lookup. The returned
    endpoint carries the judged address; connect to `Endpoint.address`/`Endpoint.base`, never to
    the name again. `hint` ends a refusal's message (how this command takes an allow-list).
    """
    allowed = allow_list(allow)
    ep = parse_endpoint(url)
    if ep.address is not None:
        if allowed.admits(ep.address):
            return ep
        raise EndpointError(
            f"refusing to connect to {what} {url!r} ({ep.address}): only {allowed.describe()} "
            + ("may be reached" if allowed else "may be reached without an allow-list")
            + hint
        )
    if not allowed:
        raise EndpointError(
            f"refusing to connect to {what} {url!r}: a host name other than localhost is not looked up "
            f"without an allow-list; only {LOOPBACK_HINT} may be reached without one{hint}"
        )
    addresses = _resolve(ep)
    by_name = ep.host in allowed.names
    refused = [a for a in addresses if not (by_name or allowed.admits(a))]
    if refused:
        raise EndpointError(
            f"refusing to connect to {what} {url!r}: {ep.host} resolves to "
            f"{', '.join(map(str, refused))}, outside {allowed.describe()}{hint}"
        )
    return replace(ep, address=addresses[0])


def is_loopback_url(url: str) -> bool:
    """Whether `url` names a loopback address (in any form), without a lookup."""
    try:
        return parse_endpoint(url).is_loopback
    except EndpointError:
        return False


# --------------------------------------------------------------------------- HTTP


def _netloc_of(host: str, port: int | None) -> str:
    where = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{where}:{port}" if port is not None else where


class _Judge:
    """The policy for one opener: each (scheme, host, port) judged and resolved once, then remembered."""

    def __init__(self, allow: AllowList) -> None:
        self.allow = allow
        self.seen: dict[tuple[str, str, int], Endpoint] = {}

    def __call__(self, url: str, what: str = "endpoint") -> Endpoint:
        ep = parse_endpoint(url)
        key = (ep.scheme, ep.host, ep.port)
        if key not in self.seen:
            self.seen[key] = require_allowed(url, self.allow, what)
        return self.seen[key]


class _PinnedHTTP(http.client.HTTPConnection):
    """An HTTP connection that judges its host by the policy and connects to the judged address."""

    def __init__(self, host: str, *, judge: _Judge, **kw: Any) -> None:
        super().__init__(host, **kw)
        self._judge = judge

    def connect(self) -> None:
        ep = self._judge(f"http://{_netloc_of(self.host, self.port)}")
        self.sock = socket.create_connection((str(ep.address), ep.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """The HTTPS twin: TCP to the judged address, TLS (SNI, certificate) for the name as written."""

    def __init__(self, host: str, *, judge: _Judge, **kw: Any) -> None:
        super().__init__(host, **kw)
        self._judge = judge

    def connect(self) -> None:
        ep = self._judge(f"https://{_netloc_of(self.host, self.port)}")
        sock = socket.create_connection((str(ep.address), ep.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, judge: _Judge) -> None:
        super().__init__()
        self._judge = judge

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_PinnedHTTP, judge=self._judge), req)  # type: ignore[arg-type]


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, judge: _Judge) -> None:
        super().__init__()
        self._judge = judge

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(_PinnedHTTPS, judge=self._judge), req)  # type: ignore[arg-type]


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an endpoint the policy admits; refuses it before connecting otherwise."""

    def __init__(self, judge: _Judge) -> None:
        super().__init__()
        self._judge = judge

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        try:
            self._judge(newurl, "redirect target")
        except EndpointError as exc:
            raise EndpointError(f"refusing to follow HTTP {code} from {req.full_url}: {exc}") from None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _opener(judge: _Judge) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(
        urllib.request.ProxyHandler({}), _HTTPHandler(judge), _HTTPSHandler(judge), _Redirects(judge)
    )


def opener(allow: Iterable[str] | AllowList | None = ()) -> urllib.request.OpenerDirector:
    """A urllib opener on the endpoint policy: judged, pinned connections; judged redirects; no proxies."""
    return _opener(_Judge(allow_list(allow)))


def open_url(
    url: str | Endpoint,
    allow: Iterable[str] | AllowList | None = (),
    timeout: float = 10.0,
    headers: dict[str, str] | None = None,
) -> Any:
    """GET `url` on the endpoint policy (judged first, so a refusal is an EndpointError before any I/O).

    An `Endpoint` that `require_allowed` returned is used as judged (its name is not looked up
    again). Returns urllib's response (a context manager); HTTP errors raise
    urllib.error.HTTPError as usual.
    """
    judge = _Judge(allow_list(allow))
    if isinstance(url, Endpoint) and url.address is not None:
        judge.seen[(url.scheme, url.host, url.port)] = url
        ep = url
    else:
        ep = judge(url.url if isinstance(url, Endpoint) else url)
    request = urllib.request.Request(f"{ep.scheme}://{ep.authority}{ep.path}", headers=headers or {})
    return _opener(judge).open(request, timeout=timeout)
