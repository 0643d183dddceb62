"""The reference service with a known Triton access token, on free loopback ports (calibrate tests).

The token goes to the service in a 0600 file (TRITON_ACCESS_TOKEN_FILE), never on a command line.
Realistic inputs (a golden page as the gateway sends it, one line crop) are written by
bench/calibration_inputs.py, which asks the live detector for the page's boxes.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.reference_service.conftest import ROOT, SERVICE_PY, _wait_ready, free_ports, stop_service


@dataclass
class Triton:
    url: str  # Triton's HTTP endpoint
    token_file: Path
    inputs: Path  # calibrate --inputs DIR (and DIR/perf_analyzer/MODEL for perf_analyzer)
    shapes: dict


@pytest.fixture(scope="session")
def triton(tmp_path_factory) -> Triton:
    if not SERVICE_PY.exists():
        if os.environ.get("CI"):
            pytest.fail("reference_service/.venv is missing; run `make reference-venv`")
        pytest.skip("reference_service/.venv is missing; run `make reference-venv`")
    http, t_http, t_grpc, t_metrics = free_ports(4)
    base = tmp_path_factory.mktemp("calibrate")
    token_file = base / "token"
    token_file.write_text(secrets.token_urlsafe(24), encoding="utf-8")
    token_file.chmod(0o600)
    private_tmp = Path(tempfile.mkdtemp(prefix="ocrc-", dir="/tmp"))
    env = {**os.environ, "TMPDIR": str(private_tmp), "TRITON_ACCESS_TOKEN_FILE": str(token_file)}
    cmd = [str(SERVICE_PY), "-m", "reference_service", "serve", "--profile", "cpu", "--http-port", str(http)]
    cmd += ["--triton-http-port", str(t_http), "--triton-grpc-port", str(t_grpc)]
    cmd += ["--triton-metrics-port", str(t_metrics)]
    log = base / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    try:
        _wait_ready(f"http://127.0.0.1:{http}", proc, 120)
        inputs = base / "inputs"
        got = subprocess.run(
            [str(SERVICE_PY), str(ROOT / "bench" / "calibration_inputs.py"), str(inputs)]
            + ["--triton", f"127.0.0.1:{t_http}", "--token-file", str(token_file)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert got.returncode == 0, got.stderr[-2000:]
        import json

        shapes = json.loads(got.stdout.strip().splitlines()[-1])
        yield Triton(f"http://127.0.0.1:{t_http}", token_file, inputs, shapes)
        assert token_file.read_text() not in log.read_text(errors="replace"), "the token was logged"
    finally:
        stop_service(proc, private_tmp)
        shutil.rmtree(private_tmp, ignore_errors=True)
