"""Prometheus and Triton answers that are garbage, wrong-shaped, truncated, slow or endless:
findings (unknown) in bounded time, never an exception or a hang.

The servers are a tiny local HTTP stand-in on 127.0.0.1 that answers badly on purpose: no
real Prometheus or Triton can be made to send these answers.
"""

from __future__ import annotations

import signal
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from archkit.spec import load_text
from archkit.verify.prometheus import check_prometheus
from archkit.verify.triton import check_triton

pytestmark = pytest.mark.live  # servers on 127.0.0.1, and the bounded times are measured

SPEC = load_text(
    "apiVersion: archkit/v1\nmetadata: {name: t}\n"
    "dataflow:\n  stages:\n    - {id: m, kind: model, service: triton, model: {name: ocr, version: '1', server: triton}}\n"
    "observability:\n  scrape: [{service: triton, port: 8002}]\n"
).spec

MODES: dict[str, bytes] = {
    "garbage": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\nnot json",
    "list": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n[1,2]",
    "number": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n1e9",
    "nan": b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nNaN",
    "shapes": (
        b'HTTP/1.1 200 OK\r\nContent-Length: 139\r\n\r\n{"status": "success", "data": {"groups": [1, "x", {"name": [1]},'
        b' {"name": "g", "rules": 7}], "activeTargets": [1, {"labels": [2], "scrapeUrl": 5}]}, "x": 1}'
    ),
    "groups-int": b'HTTP/1.1 200 OK\r\nContent-Length: 43\r\n\r\n{"status": "success", "data": {"groups": 5}}',
    "truncated": b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"status": "succ',
    "not-http": b"SSH-2.0-OpenSSH_9.2\r\n",
    "bad-status": b"HTTP/1.1 abc\r\n\r\n",
    "empty": b"",
}
DYNAMIC = {"slow", "endless", "silent"}


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        mode: str = self.server.mode  # type: ignore[attr-defined]
        sock: socket.socket = self.request
        sock.settimeout(10)
        try:
            sock.recv(65536)  # the request; its content does not matter
            if mode in MODES:
                sock.sendall(MODES[mode])
            elif mode == "slow":  # one byte of a valid answer every 0.2 s, for up to a minute
                sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                for _ in range(300):
                    sock.sendall(b" ")
                    time.sleep(0.2)
            elif mode == "endless":  # a body that never ends, as fast as it can go
                sock.sendall(b"HTTP/1.1 200 OK\r\n\r\n[")
                chunk = b"0," * 32768
                end = time.monotonic() + 60
                while time.monotonic() < end:
                    sock.sendall(chunk)
            elif mode == "silent":  # accepts, then never answers
                time.sleep(30)
        except OSError:
            pass  # the client gave up: what the test wants


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def bad_server() -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.mode = "garbage"  # type: ignore[attr-defined]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


class _Hang(Exception):
    pass


def _within(seconds: int):
    """Fail (instead of hanging the suite) when the call takes longer than `seconds`."""

    def alarm(signum, frame):
        raise _Hang(f"no answer within {seconds} s")

    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)


@pytest.mark.parametrize("mode", sorted(MODES) + sorted(DYNAMIC))
def test_prometheus_bad_answers_are_unknown_findings(bad_server, mode):
    bad_server.mode = mode
    url = f"http://127.0.0.1:{bad_server.server_address[1]}"
    _within(30)
    try:
        findings = check_prometheus(SPEC, url, ["g"], timeout_s=0.5)
    finally:
        signal.alarm(0)
    assert findings, mode
    assert all("\n" not in f.message for f in findings)
    if mode not in ("shapes",):
        assert findings[0].code == "VP300" and findings[0].status == "unknown", findings[0]


@pytest.mark.parametrize("mode", sorted(MODES) + sorted(DYNAMIC))
def test_triton_bad_answers_are_unknown_findings(bad_server, mode):
    """Triton's health endpoints are judged by status code only, so a 200 with garbage is
    'live'; the model lookups that follow must then be unknown, not a crash or a hang."""
    bad_server.mode = mode
    _within(60)
    try:
        findings = check_triton(SPEC, f"127.0.0.1:{bad_server.server_address[1]}", timeout_s=0.5)
    finally:
        signal.alarm(0)
    by_code = {f.code: f for f in findings}
    assert "VT200" in by_code or "VT210" in by_code, [(f.code, f.message) for f in findings]
    problem = by_code.get("VT200") or by_code["VT210"]
    assert problem.status == "unknown" and "\n" not in problem.message, problem
    assert all(f.status != "pass" for f in findings if f.code not in ("VT201", "VT202")), findings
