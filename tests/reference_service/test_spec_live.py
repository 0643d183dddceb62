"""archkit against the live reference service: Triton's model configs match the spec."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _archkit() -> str:
    exe = Path(sys.executable).with_name("archkit")
    found = str(exe) if exe.exists() else shutil.which("archkit")
    if found is None:
        pytest.skip("archkit CLI not installed in this environment")
    return found


def test_archkit_verify_finds_no_drift_against_live_triton(service):
    """Batching, queue policy, instances and versions that Triton reports equal the spec's."""
    out = subprocess.run(
        [
            _archkit(),
            "verify",
            str(ROOT / "specs" / "ocr-reference.yaml"),
            "--triton-url",
            service.triton_http,
            "--manifests",
            str(ROOT / "reference_service" / "deploy"),
            "-f",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "ocr_recogniser" in out.stdout and "ocr_detector" in out.stdout
    json.loads(out.stdout)
