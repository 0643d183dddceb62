"""A private reference-service instance for the runbook live tests.

The reference service's own session fixture is stopped by its last test (it checks that
SIGTERM leaves nothing behind), so the runbook tests start their own instance on free
loopback ports with the same command, and always stop it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.reference_service.conftest import ROOT, SERVICE_PY, Service, _wait_ready, free_ports, stop_service


@pytest.fixture(scope="session")
def live_service(tmp_path_factory):
    """The whole OCR service (Triton + gateway) on free 127.0.0.1 ports; stopped afterwards."""
    if not SERVICE_PY.exists():
        if os.environ.get("ARCHKIT_REQUIRE_LIVE"):
            pytest.fail("reference_service/.venv is missing; run `make reference-venv`")
        pytest.skip("reference_service/.venv is missing; run `make reference-venv`")
    http, t_http, t_grpc, t_metrics = free_ports(4)
    log = tmp_path_factory.mktemp("runbook_live") / "serve.log"
    private_tmp = Path(tempfile.mkdtemp(prefix="ocrr-", dir="/tmp"))  # short: PyTriton's unix sockets
    cmd = [
        str(SERVICE_PY),
        "-m",
        "reference_service",
        "serve",
        "--http-port",
        str(http),
        "--triton-http-port",
        str(t_http),
        "--triton-grpc-port",
        str(t_grpc),
        "--triton-metrics-port",
        str(t_metrics),
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "TMPDIR": str(private_tmp)},
        )
    url = f"http://127.0.0.1:{http}"
    try:
        _wait_ready(url, proc, 120)
        svc = Service(
            url,
            proc.pid,
            f"http://127.0.0.1:{t_http}",
            f"http://127.0.0.1:{t_metrics}",
            None,
            log,
            proc,
            private_tmp,
        )
        yield svc
    finally:
        stop_service(proc, private_tmp)
        shutil.rmtree(private_tmp, ignore_errors=True)
