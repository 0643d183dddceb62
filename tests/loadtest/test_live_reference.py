"""Live: a short baseline against the OCR reference service (Triton + gateway) on free loopback ports."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml

from archkit import api

from .conftest import HERE, free_port

ROOT = HERE.parents[1]
REF_PY = ROOT / "reference_service" / ".venv" / "bin" / "python"

pytestmark = [pytest.mark.live, pytest.mark.slow,
              pytest.mark.skipif(not REF_PY.exists(), reason="reference_service/.venv not built (make reference-venv)")]


@pytest.fixture
def reference(tmp_path):
    ports = {k: free_port() for k in ("http", "triton_http", "triton_grpc", "metrics")}
    log = tmp_path / "serve.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([str(REF_PY), "-m", "reference_service", "serve", "--http-port", str(ports["http"]),
                                 "--triton-http-port", str(ports["triton_http"]), "--triton-grpc-port",
                                 str(ports["triton_grpc"]), "--triton-metrics-port", str(ports["metrics"]),
                                 "--ready-timeout", "90"], cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 100
        while "ready:" not in log.read_text() and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.3)
        assert "ready:" in log.read_text(), log.read_text()[-3000:]
        yield ports
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_baseline_against_the_reference_service(reference, tmp_path) -> None:
    data = yaml.safe_load((HERE / "specs" / "ocr-local.yaml").read_text())
    data["loadtest"]["target"]["host"] = f"http://127.0.0.1:{reference['http']}"
    data["observability"]["scrape"][0]["port"] = reference["http"]
    data["observability"]["scrape"][1]["port"] = reference["metrics"]
    data["loadtest"]["scenarios"][0]["payload"]["folder"] = str(ROOT / "reference_service" / "golden" / "images")
    spec = tmp_path / "ocr.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    res = api.loadtest(spec, "baseline", duration=8, users=2, rate=0.5, report_dir=tmp_path / "rep",
                       prometheus=False).result
    e2e = res.measured["end_to_end"]
    assert e2e["requests"] >= 2 and e2e["errors"] == 0, (e2e, res.data.log[-2000:])
    dec = res.measured["decomposition"]
    assert set(dec["models"]) == {"ocr_detector", "ocr_recogniser"}
    det = dec["models"]["ocr_detector"]
    assert det["compute_infer_ms"] > 0 and det["queue_ms"] >= 0 and det["requests"] >= e2e["requests"]
    assert dec["stages"]["gateway"]["count"] >= e2e["requests"]
    assert dec["server"]["source"].startswith("stage gateway")
    # the client saw at least what the server measured, give or take the histogram's interpolation
    assert dec["network_serialisation_ms"] > -0.05 * e2e["mean_ms"]
    assert (tmp_path / "rep" / "report.html").exists()
    assert Path(tmp_path / "rep" / "measured.json").exists()
