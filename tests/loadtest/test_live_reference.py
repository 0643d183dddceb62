"""Live: a short baseline against the OCR reference service (Triton + gateway) on free loopback ports."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from archkit import api
from archkit.process import stop

from .conftest import HERE, free_port

ROOT = HERE.parents[1]
REF_PY = ROOT / "reference_service" / ".venv" / "bin" / "python"

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.skipif(not REF_PY.exists(), reason="reference_service/.venv not built (make reference-venv)"),
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The reference service on free ports, once for this module; always stopped."""
    ports = {k: free_port() for k in ("http", "triton_http", "triton_grpc", "metrics")}
    log = tmp_path_factory.mktemp("reference") / "serve.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [
                str(REF_PY),
                "-m",
                "reference_service",
                "serve",
                "--http-port",
                str(ports["http"]),
                "--triton-http-port",
                str(ports["triton_http"]),
                "--triton-grpc-port",
                str(ports["triton_grpc"]),
                "--triton-metrics-port",
                str(ports["metrics"]),
                "--ready-timeout",
                "90",
            ],
            cwd=ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    try:
        end = time.monotonic() + 100
        while "ready:" not in log.read_text() and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.3)
        assert "ready:" in log.read_text(), log.read_text()[-3000:]
        yield ports
    finally:
        stop(proc, timeout=20)


def _spec(reference, tmp_path: Path, headers: dict[str, str] | None = None) -> Path:
    """tests/loadtest/specs/ocr-local.yaml pointed at this run's ports (its scenario sending
    `headers`, when given)."""
    data = yaml.safe_load((HERE / "specs" / "ocr-local.yaml").read_text())
    if headers:
        data["loadtest"]["scenarios"][0]["headers"] = headers
    data["loadtest"]["target"]["host"] = f"http://127.0.0.1:{reference['http']}"
    data["observability"]["scrape"][0]["port"] = reference["http"]
    data["observability"]["scrape"][1]["port"] = reference["metrics"]
    data["loadtest"]["scenarios"][0]["payload"]["folder"] = str(
        ROOT / "reference_service" / "golden" / "images"
    )
    spec = tmp_path / "ocr.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    return spec


def test_baseline_against_the_reference_service(reference, tmp_path) -> None:
    spec = _spec(reference, tmp_path)
    # a P50 budget no OCR can meet: the run must fail and say why (other budgets are loose). Eight
    # samples decide a P50 (95 % interval [X_(1), X_(8)]) but not a P99, which stays inconclusive.
    spec.write_text(spec.read_text().replace("p50_ms: 8000", "p50_ms: 1"))
    res = api.loadtest(
        spec, "baseline", duration=8, users=4, rate=1, report_dir=tmp_path / "rep", prometheus=False
    ).result
    e2e = res.measured["end_to_end"]
    assert e2e["requests"] >= 2 and e2e["errors"] == 0, (e2e, res.data.log[-2000:])
    dec = res.measured["decomposition"]
    assert set(dec["models"]) == {"ocr_detector", "ocr_recogniser"}
    det = dec["models"]["ocr_detector"]
    # a repeated image is a cache hit and never reaches the detector (seed 004 §3.3)
    assert det["compute_infer_ms"] > 0 and det["queue_ms"] >= 0 and 1 <= det["requests"] <= e2e["requests"]
    assert dec["stages"]["gateway"]["count"] >= e2e["requests"]
    assert dec["server"]["source"].startswith("stage gateway")
    # the client saw at least what the server measured, give or take the histogram's interpolation
    assert dec["network_serialisation_ms"] > -0.05 * e2e["mean_ms"]
    assert not res.passed
    failed = {v.id for v in res.verdicts if v.passed is False}
    # A request the open-model generator could not hand out when due (every user still waiting on
    # a cold or busy service: CI's run of this test once dropped some) counts as failed, so only
    # then may the error-rate and throughput budgets fail as well; otherwise P50 alone fails.
    if e2e.get("dropped"):
        assert "end_to_end.p50_ms" in failed
        assert failed <= {"end_to_end.p50_ms", "end_to_end.error_rate", "end_to_end.throughput_rps"}
    else:
        assert failed == {"end_to_end.p50_ms"}, (e2e, res.data.log[-2000:])
    assert {v.id: v.outcome for v in res.verdicts}["end_to_end.p99_ms"] == "inconclusive"
    assert "end_to_end.p50_ms" in (tmp_path / "rep" / "report.md").read_text().split("## Budgets")[0]
    assert (tmp_path / "rep" / "report.html").exists()
    assert Path(tmp_path / "rep" / "measured.json").exists()


@pytest.mark.parametrize("protocol", ["triton-http", "triton-grpc"])
def test_triton_targets_through_tritonclient(reference, tmp_path, protocol) -> None:
    """The detector model straight through Triton: a raw 1x96x128x3 uint8 image as the payload."""
    from PIL import Image

    img = Image.open(ROOT / "reference_service" / "golden" / "images" / "doc_000.png").convert("RGB")
    (tmp_path / "page.rgb").write_bytes(img.resize((128, 96)).tobytes())
    port = reference["triton_http"] if protocol == "triton-http" else reference["triton_grpc"]
    spec = tmp_path / "triton.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "archkit/v1",
                "metadata": {"name": "det"},
                "budgets": {"error_rate": 0.0},
                "dataflow": {
                    "stages": [{"id": "detect", "kind": "model", "model": {"name": "ocr_detector"}}]
                },
                "observability": {"scrape": [{"service": "triton", "port": reference["metrics"]}]},
                "loadtest": {
                    "target": {"protocol": protocol, "host": f"http://127.0.0.1:{port}"},
                    "scenarios": [
                        {
                            "id": "detect",
                            "model": "ocr_detector",
                            "payload": {"file": "page.rgb"},
                            "inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, 96, 128, 3]}],
                            "outputs": ["boxes", "count"],
                        }
                    ],
                    "levels": [
                        {"id": "baseline", "kind": "baseline", "users": 2, "rate_rps": 4, "duration_s": 3}
                    ],
                },
            },
            sort_keys=False,
        )
    )
    res = api.loadtest(spec, "baseline", prometheus=False, plots=False).result
    e2e = res.measured["end_to_end"]
    assert e2e["requests"] >= 6 and e2e["errors"] == 0, (e2e, res.data.total.messages, res.data.log[-2000:])
    dec = res.measured["decomposition"]
    det = dec["models"]["ocr_detector"]
    assert det["requests"] >= e2e["requests"] and det["compute_infer_ms"] > 0
    assert dec["server"]["source"] == "Triton nv_inference_request_duration_us"
    assert dec["stages"]["detect"]["queue_ms"] == det["queue_ms"]
    assert res.passed


def test_stress_against_the_reference_service(reference, tmp_path) -> None:
    spec = _spec(reference, tmp_path)
    res = api.loadtest(spec, "stress", users=6, rate=3, duration=9, prometheus=False, plots=False).result
    phases = res.measured["phases"]
    assert [p["offered_rps"] for p in phases][:2] == [1.0, 2.0]  # start 1, step 1 (the level's defaults)
    assert sum(p["requests"] for p in phases) > 0  # a step shorter than one OCR may complete nothing
    assert res.measured["stress"]["failure_mode"]  # a knee and a failure mode, or "none"


def test_chaos_kill_triton_answers_503_and_recovers(reference, tmp_path) -> None:
    """Kills the Triton worker (found by its command line); the service's supervisor restarts it.

    Every request bypasses the gateway's result cache (Cache-Control: no-cache, as most of
    specs/ocr-reference.yaml's mix does): the earlier tests in this module leave a share of the
    60 golden pages cached, and a second of cache hits reads as a healthy second, so recovery
    could be judged while Triton was still down and the 503s fell outside the measured window
    (CI, 2026-12-02: 0 fallback answers).

    The run lasts 40 s past the kill: a restart loads three model processes on two cores, which
    took 16 s at load average 6-10 and did not finish within 20 s at load 11-13 (2026-12-03)."""
    spec = _spec(reference, tmp_path, headers={"Cache-Control": "no-cache"})
    target = f"triton=~--http-port {reference['triton_http']} --grpc-port"
    res = api.loadtest(
        spec, "chaos", duration=45, rate=1, services=[target], prometheus=False, plots=False
    ).result
    (f,) = res.measured["chaos"]
    seen = json.dumps({"fault": f, "seconds": res.measured["seconds"]})  # whole, should it fail
    assert f["applied"] and any("restarted as pid" in n for n in f["notes"]), seen
    assert f["fallback_status"] == 503 and f["fallback_answers"] > 0, seen
    assert f["recovery_s"] is not None, seen
    # no healthy second while Triton was down: its restart alone is 1 s' wait and a model load
    assert f["recovery_s"] >= 2.0, seen
    assert {v.id: v.passed for v in res.verdicts} == {"chaos.0.fallback": True, "chaos.0.recovered": True}
