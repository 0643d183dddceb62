"""reference_service/scripts/gpu_run.sh: the GPU machine's script, its logic tried on the CPU.

No GPU machine runs in CI; these tests run the script's dry run (every command it would run,
in order) and its refusals, and the install step on a real wheel into a scratch folder.
"""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT

SCRIPT = ROOT / "reference_service" / "scripts" / "gpu_run.sh"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_dry_run_plans_accuracy_bench_and_stress_on_the_gpu_profile(tmp_path: Path):
    out = _run("--dry-run", "run", env={"OUT": str(tmp_path), "OCR_STRESS_ENV": "h200"})
    assert out.returncode == 0, out.stderr
    steps = [line for line in out.stderr.splitlines() if line.startswith("+ ")]
    joined = "\n".join(steps)
    assert "compare_backends.py --backends torch,onnxruntime --pages 60" in joined
    assert "bench_ocr.py --served-only --profile gpu" in joined
    assert "-m reference_service serve --profile gpu" in joined
    assert "loadtest" in joined and "--level stress --host http://127.0.0.1:8080 --env h200" in joined
    assert str(tmp_path) in joined  # results go to $OUT


def test_cpu_mode_uses_the_service_venv_and_fewer_pages(tmp_path: Path):
    out = _run("--dry-run", "--cpu", "run", env={"OUT": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "reference_service/.venv/bin/python" in out.stderr
    assert "--pages 6" in out.stderr and "--env" not in out.stderr


def test_port_base_moves_the_service_and_the_load_test_off_the_defaults(tmp_path: Path):
    out = _run("--dry-run", "--cpu", "run", env={"OUT": str(tmp_path), "OCR_PORT_BASE": "18200"})
    assert out.returncode == 0, out.stderr
    assert "--http-port 18280 --triton-http-port 18200 --triton-grpc-port 18201" in out.stderr
    assert "--host http://127.0.0.1:18280" in out.stderr


def test_install_refuses_a_missing_part(tmp_path: Path):
    out = _run("install", "part1", env={"OCR_GPU_WHEELS": str(tmp_path)})
    assert out.returncode == 1
    assert "no wheels in" in out.stderr and "prepare" in out.stderr


def test_install_puts_a_wheel_into_the_site_folder(tmp_path: Path):
    part = tmp_path / "wheels" / "part2"
    part.mkdir(parents=True)
    wheel = part / "ocr_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("ocr_probe.py", "VALUE = 42\n")
        info = "ocr_probe-1.0.dist-info"
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: ocr-probe\nVersion: 1.0\n")
        z.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        z.writestr(f"{info}/RECORD", "")
    python = ROOT / "reference_service" / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip("reference_service/.venv is missing; run `make reference-venv`")
    site = tmp_path / "site"
    out = _run(
        "install",
        "part2",
        env={"OCR_GPU_WHEELS": str(tmp_path / "wheels"), "OCR_GPU_SITE": str(site), "PYTHON": str(python)},
    )
    assert out.returncode == 0, out.stderr
    assert (site / "ocr_probe.py").read_text() == "VALUE = 42\n"


def test_unknown_arguments_are_refused():
    out = _run("launch")
    assert out.returncode == 2 and "unknown argument launch" in out.stderr
