"""The endpoint policy (archkit.endpoints): every spelling normalised, names judged by their address."""

from __future__ import annotations

import http.server
import ipaddress
import socket
import threading
import urllib.error

import pytest

from archkit.endpoints import (
    EndpointError,
    allow_list,
    is_loopback_url,
    open_url,
    parse_endpoint,
    require_allowed,
)
from archkit.loadtest.safety import RemoteTargetError, is_loopback_address, require_loopback

from .forms import FORBIDDEN, LOOPBACK, REFUSED


@pytest.mark.parametrize("form", REFUSED)
def test_every_spelling_of_a_remote_address_is_refused(form, monkeypatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _no_lookup)
    with pytest.raises(EndpointError):
        require_allowed(form.format(port=9))
    with pytest.raises(RemoteTargetError, match="loopback"):
        require_loopback(form.format(port=9))


@pytest.mark.parametrize("form", LOOPBACK)
def test_every_spelling_of_loopback_is_allowed_without_a_lookup(form, monkeypatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _no_lookup)
    ep = require_allowed(form.format(port=9))
    assert ep.address is not None and ep.address.is_loopback and ep.port == 9
    assert ep.base.endswith(":9") and is_loopback_url(form.format(port=9))


def _no_lookup(*args, **kwargs):
    raise AssertionError(f"looked up {args[0]!r}")


@pytest.mark.parametrize(
    "url,host",
    [
        ("http://167772161", "10.0.0.1"),
        ("http://012.0.0.1", "10.0.0.1"),
        ("http://0x7f000001", "127.0.0.1"),
        ("http://127.1", "127.0.0.1"),
        ("http://[::ffff:10.0.0.1]", "10.0.0.1"),
        ("http://127.0.0.1.", "127.0.0.1"),
        ("http://[::1]", "::1"),
        ("http://Example.COM.", "example.com"),
        ("localhost:8000", "127.0.0.1"),
    ],
)
def test_numeric_and_mapped_forms_normalise_as_the_c_library_reads_them(url, host) -> None:
    assert parse_endpoint(url).host == host


@pytest.mark.parametrize("spelled", ["167772161", "012.0.0.1", "0x7f000001", "127.1", "0xa.0.1", "10.1"])
def test_numeric_forms_match_what_getaddrinfo_connects_to(spelled) -> None:
    """The independent reading: glibc's getaddrinfo (numeric only, no lookup), what clients connect to."""
    info = socket.getaddrinfo(spelled, 80, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    assert parse_endpoint(f"http://{spelled}").address == ipaddress.ip_address(info[0][4][0])


@pytest.mark.parametrize(
    "url,why",
    [
        ("ftp://127.0.0.1", "scheme"),
        ("http://127.0.0.1:99999", "not a URL"),
        ("http://256.0.0.1", "not a valid IP"),
        ("http://[127.0.0.1]", "cannot be in brackets"),
        ("http://127.0.0.1 /", "whitespace"),
        ("http://127.0.0.1%2f", "'%'"),
        ("", "empty"),
    ],
)
def test_malformed_urls_are_refused_with_a_reason(url, why) -> None:
    with pytest.raises(EndpointError, match=why):
        parse_endpoint(url)


def test_an_allow_list_admits_addresses_networks_and_names(monkeypatch) -> None:
    """DNS is a stand-in here (a patched getaddrinfo): no resolver that answers exists on this machine."""
    answers = {"prom.internal": "10.0.0.7", "evil.internal": "192.0.2.1", "mixed.internal": "10.0.0.8"}
    lookups: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    assert require_allowed("http://167772161:80", ["10.0.0.0/8"]).address == ipaddress.ip_address(FORBIDDEN)
    assert require_allowed("http://[::ffff:10.0.0.1]", ["::ffff:10.0.0.0/104"]).host == FORBIDDEN
    assert require_allowed("http://10.0.0.1", ["012.0.0.1"]).host == FORBIDDEN  # entries normalise too
    ep = require_allowed("http://prom.internal:9090/x", ["10.0.0.0/24"])
    assert (ep.base, ep.authority) == ("http://10.0.0.7:9090/x", "prom.internal:9090")
    assert lookups == ["prom.internal"]  # once
    with pytest.raises(EndpointError, match="192.0.2.1"):
        require_allowed("http://evil.internal", ["10.0.0.0/8"])
    assert require_allowed("http://evil.internal", ["evil.internal"]).host == "evil.internal"
    with pytest.raises(EndpointError, match="10.0.0.2"):
        require_allowed("http://10.0.0.2", ["10.0.0.1"])
    with pytest.raises(EndpointError, match="not a network"):
        allow_list(["10.0.0.0/40"])


def test_the_socket_guard_reads_numeric_forms_as_connect_would() -> None:
    assert is_loopback_address(("127.1", 80)) and is_loopback_address(("0x7f000001", 80))
    assert not is_loopback_address(("167772161", 80)) and not is_loopback_address(("::1%lo", 80, 0, 1))


class _Redirect(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        target = "/final" if self.path == "/inside" else "http://10.0.0.1:9/x"
        if self.path == "/final":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            return
        self.send_response(302)
        self.send_header("Location", target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_the_opener_follows_redirects_only_within_the_allowed_set(monkeypatch) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("http_proxy", "http://10.9.9.9:3128")  # never used: proxies are off
    try:
        port = server.server_address[1]
        with open_url(f"http://127.1:{port}/inside", timeout=5) as resp:
            assert resp.read() == b"ok"
        with pytest.raises(EndpointError, match="refusing to follow HTTP 302"):
            open_url(f"http://0x7f000001:{port}/outside", timeout=5)
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(urllib.error.URLError):  # nothing listens there: a connection error, not a refusal
        open_url(f"http://127.0.0.1:{port}/", timeout=2)
