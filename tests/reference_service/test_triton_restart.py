"""Faults: Triton killed mid-run (503, then recovery), and a clean stop on SIGTERM.

Runs last in this folder (it stops the session's service).
"""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest

from .conftest import comm, unique_png

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_triton_killed_gives_503_then_recovers(service, golden_pngs):
    pids = service.tritonserver_pids()
    assert pids, "no tritonserver process under the service"
    body = golden_pngs["images/doc_020.png"]
    # PyTriton's stubs run from /tmp/folderXXXXXX copies of its models; the native repository's
    # stubs (the default) run from the run folder, removed at stop (the next test checks it)
    old_stub_dirs = service.stub_dirs()
    old_stubs = service.stub_pids()
    assert len(old_stubs) == 3, "one stub per model instance: detector 1, recogniser 2"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    codes, deadline = [], time.monotonic() + 90
    salt = 0
    while time.monotonic() < deadline:
        salt += 1
        r = httpx.post(
            f"{service.url}/v1/ocr",
            content=unique_png(body, salt),
            headers={"Content-Type": "image/png"},
            timeout=30,
        )
        codes.append(r.status_code)
        if r.status_code == 503:
            assert r.headers.get("Retry-After") == "1"
            assert r.json()["error"]["code"] == "triton_unavailable"
        if r.status_code == 200 and 503 in codes:
            break
        time.sleep(0.3)
    assert 503 in codes, codes
    assert codes[-1] == 200, codes
    assert set(codes) <= {200, 503}, codes
    assert httpx.get(f"{service.url}/readyz", timeout=5).status_code == 200
    # The crashed server's python-backend copies are removed by the supervisor.
    assert not [d for d in old_stub_dirs if d.exists()]
    # and none of its stubs (the models' processes) outlives it
    assert not [p for p in old_stubs if comm(p)], old_stubs
    metrics = httpx.get(f"{service.url}/metrics", timeout=5).text
    restarts = [ln for ln in metrics.splitlines() if ln.startswith("ocr_triton_restarts_total")]
    assert restarts and float(restarts[0].split()[-1]) >= 1
    cold = [ln for ln in metrics.splitlines() if ln.startswith("ocr_cold_start_seconds")]
    assert cold and 0 < float(cold[0].split()[-1]) < 60


def test_sigterm_stops_within_10s_leaving_nothing(service):
    report = service.stop()
    assert report["stop_s"] < 10, report
    assert report["leftover_processes"] == [], report
    assert report["leftover_tmp"] == [], report
    assert report["returncode"] == 0, report
