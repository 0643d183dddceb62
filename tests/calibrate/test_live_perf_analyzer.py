"""`archkit calibrate` against NVIDIA's perf_analyzer (tritonclient 2.40.0's binary) on the same Triton.

For each model of the reference service at batch 1, on the same inputs, calibrate's mean service
time (compute input + infer + output from Triton's statistics, per request) must agree with
perf_analyzer's server compute time within 10 %. The two run in turns, five times each, and the
median of the five paired ratios is compared: on a shared 2-core machine a neighbour's burst lands
in one run, not in all, and a load that drifts across the rounds moves both runs of a round alike,
so it cancels in that round's ratio. (A clean-clone run once read medians of 61.7 and 53.0 ms,
16 % apart, while its five paired ratios were 1.18, 1.02, 1.11, 1.02 and 0.99: median 1.02.)
Both time the single item (`single_inputs`): calibrate's detector mix of every golden page
(`mix.json`) is checked on its own, with the interleaved cores rounds, by the last test.
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reference_service.conftest import ROOT

pytestmark = pytest.mark.live

ROUNDS = 5


def perf_analyzer() -> tuple[Path, Path]:
    binary = Path(os.environ.get("ARCHKIT_PERF_ANALYZER", ROOT / ".cache/perf_analyzer/bin/perf_analyzer"))
    libs = Path(
        os.environ.get(
            "ARCHKIT_PERF_ANALYZER_LIBS", ROOT / ".cache/perf_analyzer/cuda/nvidia/cuda_runtime/lib"
        )
    )
    if not binary.exists():
        if os.environ.get("CI"):
            pytest.fail("perf_analyzer is missing: run make setup")
        pytest.skip("perf_analyzer is missing: run make setup")
    return binary, libs


def pa_compute_ms(triton, model: str, tmp: Path) -> float:
    binary, libs = perf_analyzer()
    shapes = triton.shapes[model]
    out = tmp / f"pa-{model}.csv"
    cmd = [str(binary), "-m", model, "-u", triton.url.split("//", 1)[1], "-i", "http"]
    cmd += ["-H", f"triton-access-token:{triton.token_file.read_text().strip()}"]
    cmd += ["--concurrency-range", "1", "--input-data", str(triton.inputs / "perf_analyzer" / model)]
    for name, shape in shapes.items():
        cmd += ["--shape", f"{name}:{','.join(map(str, shape))}"]
    # count windows: a noisy shared machine never meets the default 10 % stability in time windows
    cmd += ["--measurement-mode", "count_windows", "--measurement-request-count", "20"]
    cmd += ["--stability-percentage", "1000", "--max-trials", "5", "-f", str(out)]
    got = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "LD_LIBRARY_PATH": str(libs)}
    )
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    row = next(csv.DictReader(out.open()))
    us = sum(float(row[k]) for k in ("Server Compute Input", "Server Compute Infer", "Server Compute Output"))
    return us / 1000.0


def single_inputs(triton, tmp: Path) -> Path:
    """The fixture's inputs without the detector's mix: the one item perf_analyzer sends too."""
    root = tmp / "single"
    if not root.exists():
        for model in ("ocr_detector", "ocr_recogniser"):
            (root / model).mkdir(parents=True)
            for npy in (triton.inputs / model).glob("*.npy"):
                (root / model / npy.name).symlink_to(npy)
    return root


def run_calibrate(triton, model: str, inputs: Path, out: Path, *args: str) -> dict:
    got = subprocess.run(
        [sys.executable, "-m", "archkit", "calibrate", str(ROOT / "specs/ocr-reference.yaml"), "--env", "cpu"]
        + ["--triton", triton.url, "--token-file", str(triton.token_file), "--inputs", str(inputs)]
        + ["--model", model, "--batch-sizes", "1", *args, "-o", str(out), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr[-2000:]
    doc = json.loads(got.stdout)
    assert json.loads(out.read_text()) == doc
    return doc


def calibrate_ms(triton, model: str, tmp: Path) -> float:
    args = ("--concurrency", "1", "--seconds", "1", "--requests", "20")
    doc = run_calibrate(triton, model, single_inputs(triton, tmp), tmp / f"cal-{model}.json", *args)
    (batch,) = doc["models"][model]["batches"]
    assert batch["batch_size"] == 1 and batch["requests"] == 20
    return batch["service_ms"]["mean"]


@pytest.mark.parametrize("model", ["ocr_detector", "ocr_recogniser"])
def test_calibrate_agrees_with_perf_analyzer_at_batch_1(triton, model, tmp_path) -> None:
    ours, theirs = [], []
    for _ in range(ROUNDS):
        ours.append(calibrate_ms(triton, model, tmp_path))
        theirs.append(pa_compute_ms(triton, model, tmp_path))
    ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
    assert ratio == pytest.approx(1.0, rel=0.10), {"calibrate_ms": ours, "perf_analyzer_ms": theirs}


def test_statistics_need_the_token(triton) -> None:
    """PyTriton guards the statistics endpoint: no token, no numbers (so the token plumbing matters)."""
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{triton.url}/v2/models/ocr_detector/stats", timeout=10)
    assert err.value.code in (401, 403)
    req = urllib.request.Request(
        f"{triton.url}/v2/models/ocr_detector/stats",
        headers={"triton-access-token": triton.token_file.read_text().strip()},
    )
    assert json.loads(urllib.request.urlopen(req, timeout=10).read())["model_stats"]


def test_the_detector_runs_its_mix_and_the_cores_come_from_interleaved_rounds(triton, tmp_path) -> None:
    """Every golden page once (`mix.json`: 60 pages, weight 1; more than --requests 20), and 1 and 2
    in flight in five rounds of turns whose median paired ratio is the speed-up at 2. The readings
    themselves depend on the machine's load; what holds on any machine is how they were taken."""
    mix = json.loads((triton.inputs / "ocr_detector" / "mix.json").read_text())["items"]
    assert len(mix) == 60 and {e["weight"] for e in mix} == {1}
    args = ("--concurrency", "1,2", "--seconds", "2.5", "--requests", "20")
    doc = run_calibrate(triton, "ocr_detector", triton.inputs, tmp_path / "cal.json", *args)
    entry = doc["models"]["ocr_detector"]
    (batch,) = entry["batches"]
    assert batch["requests"] == 60 and sorted(entry["mix"]["order"]) == list(range(60))
    rounds = entry["rounds"]
    assert rounds["rounds"] == 5 and rounds["window_s"] == 0.5 and len(rounds["ratios"]) == 5
    assert rounds["speedup"] == pytest.approx(statistics.median(rounds["ratios"]), abs=1e-3)
    at = {p["concurrency"]: p for p in entry["concurrency"]}
    assert at[1]["speedup"] == 1.0 and at[2]["speedup"] == rounds["speedup"]
    assert isinstance(doc["warnings"], list)
