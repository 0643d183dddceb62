"""archkit verify reads the live histogram's `le` boundaries: a latency SLO threshold off them is drift.

A real Prometheus (Debian's binary, 127.0.0.1, temporary TSDB) scrapes a small HTTP server that
exports the histogram's bucket series as a client library would.
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from archkit.loadtest.prom import LivePrometheus
from archkit.plans.context import prepare
from archkit.verify.findings import Status
from archkit.verify.prometheus import slo_buckets as check_slo_buckets

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DEMO = Path(__file__).parent / "data" / "slo-demo.yaml"
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not Path(PROMETHEUS).exists(), reason="prometheus is not installed (make setup)"),
]

# what prometheus_client writes for buckets (0.05, 0.1, 0.25, 0.5, 1, 2.5): note "1.0", not "1"
METRICS = "".join(
    f'http_request_duration_seconds_bucket{{le="{le}"}} {n}\n'
    for le, n in (("0.05", 1), ("0.1", 2), ("0.25", 3), ("0.5", 4), ("1.0", 5), ("2.5", 6), ("+Inf", 6))
).encode()


class _Metrics(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server interface
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(METRICS)

    def log_message(self, *args: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_threshold_off_the_live_buckets_is_drift() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    prom = LivePrometheus([f"http://127.0.0.1:{server.server_address[1]}/metrics"], {}, _free_port())
    prom.start()
    try:
        spec = prepare(DEMO).spec
        deadline = time.monotonic() + 30
        found = check_slo_buckets(spec, prom.url)
        while time.monotonic() < deadline and any(f.status is Status.UNKNOWN for f in found):
            time.sleep(0.5)
            found = check_slo_buckets(spec, prom.url)
        assert [f.code for f in found] == ["VP320", "VP320"], [f.message for f in found]
        statuses = sorted((f.status.value, f.message) for f in found)
        assert (
            statuses[0][0] == "drift"
            and "800 ms" in statuses[0][1]
            and "worst-case error 300 ms" in statuses[0][1]
        )
        assert statuses[1][0] == "pass" and "250 ms" in statuses[1][1]
    finally:
        prom.stop()
        server.shutdown()
