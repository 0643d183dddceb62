"""The reference service's Triton loads the config.pbtxt files `archkit render` writes.

The service builds its model configs in code (PyTriton's `ModelConfig` in
reference_service/triton_worker.py), so it cannot take a generated file; this test starts the
same Triton binary (PyTriton's 2.51 tritonserver, from reference_service/.venv) on a model
repository of the generated files and asks it for each model's config over HTTP.

The spec declares `backend: python` (the service runs OpenVINO from Triton's Python backend, the
only one PyTriton ships), so the generated files load unchanged. One stand-in: each model's
`1/model.py` is a tiny Python model (an identity), not the service's OpenVINO model. Everything in
the config — the backend, max_batch_size, dynamic batching with its preferred sizes, queue delay
and queue policy, the instance group, the version policy and a warm-up request — is Triton's to
accept or refuse, and the config Triton reports is held to the spec by the checks
`verify --triton-url` runs (zero drift, VT239's backend included).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from archkit import api
from archkit.spec.model import Scenario, TritonInput
from archkit.verify import Status
from archkit.verify.findings import Recorder
from archkit.verify.triton import triton_models
from archkit.verify.triton_config import check_config
from tests.reference_service.conftest import ROOT, SERVICE_PY, free_ports

pytestmark = pytest.mark.live

SPEC = ROOT / "specs" / "ocr-reference.yaml"
MODEL_PY = """import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(config):
        config.add_input({"name": "INPUT", "data_type": "TYPE_FP32", "dims": [-1]})
        config.add_output({"name": "OUTPUT", "data_type": "TYPE_FP32", "dims": [-1]})
        return config

    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "INPUT").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT", x)]))
        return out
"""


def _site_packages() -> Path:
    found = sorted((ROOT / "reference_service" / ".venv" / "lib").glob("python3.*/site-packages"))
    if not SERVICE_PY.exists() or not found or not (found[0] / "pytriton").is_dir():
        pytest.skip("reference_service/.venv with PyTriton is missing; run `make reference-venv`")
    return found[0]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:  # loopback only
            return resp.status, resp.read()
    except OSError:
        return 0, b""


def test_triton_loads_generated_configs_with_zero_drift(tmp_path: Path) -> None:
    site = _site_packages()
    res = api.load(SPEC)
    assert res.spec is not None
    spec = res.spec
    assert spec.loadtest is not None
    # a warm-up sample: a scenario that names the model and its input (seed 000 §3.4)
    spec.loadtest.scenarios.append(
        Scenario(
            id="det", model="ocr_detector", inputs=[TritonInput(name="INPUT", datatype="FP32", shape=[-1, 4])]
        )
    )
    # the cpu environment: this machine has no GPU, and Triton refuses KIND_GPU without one
    files, _ = api.generate(spec, str(SPEC), only=["triton"], formats=(), env="cpu")
    repo = tmp_path / "repo"
    for rel, text in files.items():
        assert isinstance(text, str)
        assert text.count('backend: "python"\n') == 1
        path = repo / rel.removeprefix("triton/")
        (path.parent / "1").mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
        (path.parent / "1" / "model.py").write_text(MODEL_PY, encoding="utf-8")
    assert "model_warmup" in (repo / "ocr_detector" / "config.pbtxt").read_text(encoding="utf-8")
    dist = site / "pytriton" / "tritonserver"
    backend = tmp_path / "backends" / "python"
    backend.mkdir(parents=True)
    for item in (dist / "backends" / "python").iterdir():
        (backend / item.name).symlink_to(item)
    minor = SERVICE_PY.resolve().name.removeprefix("python") or "3.11"
    stubs = sorted((dist / "python_backend_stubs").glob(f"{minor}*/triton_python_backend_stub"))
    stub = (
        stubs[0] if stubs else next((dist / "python_backend_stubs").glob("3.11/triton_python_backend_stub"))
    )
    (backend / "triton_python_backend_stub").symlink_to(stub)
    http, grpc, metrics = free_ports(3)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = str(site / "nvidia_pytriton.libs")
    env["PATH"] = f"{SERVICE_PY.parent}:{env.get('PATH', '')}"  # the stub's Python (numpy)
    log = (tmp_path / "triton.log").open("wb")
    proc = subprocess.Popen(
        [
            str(dist / "bin" / "tritonserver"),
            f"--model-repository={repo}",
            f"--backend-directory={tmp_path / 'backends'}",
            "--http-address=127.0.0.1",
            f"--http-port={http}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={grpc}",
            f"--metrics-port={metrics}",
            "--allow-metrics=false",
            "--exit-timeout-secs=2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,
    )
    try:
        base = f"http://127.0.0.1:{http}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if _get(f"{base}/v2/health/ready")[0] == 200:
                break
            time.sleep(0.5)
        logtext = (tmp_path / "triton.log").read_text(errors="replace")
        assert _get(f"{base}/v2/health/ready")[0] == 200, logtext[-3000:]
        run_spec = spec.with_environment("cpu")
        rec = Recorder(run_spec, "triton")
        for _, model in triton_models(run_spec):
            status, body = _get(f"{base}/v2/models/{model.name}/config")
            assert status == 200, model.name
            config = json.loads(body)
            check_config(rec, model.name, model, config)
        assert rec.findings
        assert [f.message for f in rec.findings if f.status is not Status.PASS] == []
        assert "VT239" in {f.code for f in rec.findings}
        det = json.loads(_get(f"{base}/v2/models/ocr_detector/config")[1])
        assert det["dynamic_batching"]["default_queue_policy"]["timeout_action"] == "REJECT"
        assert [w["name"] for w in det["model_warmup"]] == ["warmup-det"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
