"""Golden set through the live service: character accuracy >= 0.99, stable output."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from reference_service.accuracy import corpus_accuracy

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_golden_set_character_accuracy(service, golden_pngs):
    """Every third golden image by default (CI time on 2 cores); ARCHKIT_OCR_FULL=1 for all 60.

    bench/bench_ocr.py measures the whole set and records it in docs/benchmarks.md.
    """
    names = sorted(golden_pngs)
    if not os.environ.get("ARCHKIT_OCR_FULL"):
        names = names[::3]

    def run(name):
        r = httpx.post(
            f"{service.url}/v1/ocr",
            content=golden_pngs[name],
            headers={"Content-Type": "image/png", "Cache-Control": "no-cache"},
            timeout=120,
        )
        assert r.status_code == 200, r.text
        return name, r.json()

    with ThreadPoolExecutor(3) as pool:
        results = dict(pool.map(run, names))
    assert len(results) >= 20
    accuracy = corpus_accuracy({name: res["text"] for name, res in results.items()}, only=names)
    # The target; measured 0.9977 on all 60 pages (docs/benchmarks.md).
    assert accuracy >= 0.99, f"character accuracy {accuracy:.4f} < 0.99"
    for res in results.values():
        for line in res["lines"]:
            assert len(line["box"]) == 4 and 0.0 <= line["confidence"] <= 1.0


def test_blank_page_returns_no_lines(service):
    """PyTriton cannot return zero-size outputs; the detector pads and the gateway unpads."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("L", (300, 200), 255).save(buf, format="PNG")
    r = httpx.post(
        f"{service.url}/v1/ocr", content=buf.getvalue(), headers={"Content-Type": "image/png"}, timeout=30
    )
    assert r.status_code == 200, r.text
    assert r.json()["lines"] == [] and r.json()["text"] == ""


def test_rollback_verification_passes(service):
    """The rollback check (seed 000 §5.12): models loaded, golden outputs unchanged."""
    import subprocess

    from .conftest import ROOT, SERVICE_PY

    out = subprocess.run(
        [
            str(SERVICE_PY),
            "-m",
            "reference_service",
            "verify-rollback",
            "--url",
            service.url,
            "--triton-url",
            service.triton_http,
            "--limit",
            "6",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "rollback verified" in out.stdout
