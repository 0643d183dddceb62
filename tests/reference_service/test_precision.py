"""The service's precision is chosen from the CPU's ISA flags, or forced by $OCR_PRECISION.

Flag sets are fed in (a Zen 2 EPYC's AVX2-only set, a Zen 4/5 EPYC's AVX-512 BF16 set, a
Sapphire Rapids' AMX set), so these tests do not depend on the machine that runs them.
"""

from __future__ import annotations

import pytest

from reference_service import runtimes
from reference_service.runtimes import (
    ACCURACY_FLOOR,
    NO_BF16_MEASURED,
    PRECISION_ENV,
    choose_precision,
    cpu_flags,
    default_precision,
)

AVX2_ONLY = frozenset(["fpu", "sse4_2", "avx", "avx2", "fma", "bmi2", "sha_ni"])  # Zen 2 EPYC
AVX512_BF16 = AVX2_ONLY | frozenset(["avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"])  # Zen 4/5
AMX = AVX2_ONLY | frozenset(["avx512f", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8"])  # Sapphire Rapids


def _fastest_accurate(int8_ready: bool) -> str:
    """By hand from the measured table: the cheapest precision at or above the accuracy floor."""
    rows = [r for r in NO_BF16_MEASURED if r[2] >= ACCURACY_FLOOR and (r[0] != "int8" or int8_ready)]
    return min(rows, key=lambda r: r[1])[0]


def test_bf16_wherever_the_cpu_has_it():
    assert choose_precision(AVX512_BF16, int8_ready=True) == "bf16"
    assert choose_precision(AMX, int8_ready=False) == "bf16"


def test_avx2_only_takes_the_fastest_accurate_of_int8_and_f32():
    assert choose_precision(AVX2_ONLY, int8_ready=True) == _fastest_accurate(True)
    # Without the int8 files (not yet made by `make reference-int8`), f32.
    assert choose_precision(AVX2_ONLY, int8_ready=False) == "f32"


def test_the_measured_table_prefers_int8_on_avx2():
    """The recorded measurements say int8 is faster than f32 and keeps the accuracy floor."""
    table = {p: (ms, acc) for p, ms, acc in NO_BF16_MEASURED}
    assert table["int8"][0] < table["f32"][0]
    assert table["int8"][1] >= ACCURACY_FLOOR
    assert choose_precision(AVX2_ONLY, int8_ready=True) == "int8"


@pytest.mark.parametrize("flags", [AVX2_ONLY, AVX512_BF16, AMX], ids=["avx2", "avx512-bf16", "amx"])
@pytest.mark.parametrize("forced", ["bf16", "int8", "f32"])
def test_a_forced_precision_wins_on_every_cpu(flags, forced):
    assert choose_precision(flags, int8_ready=True, forced=forced) == forced
    assert choose_precision(flags, int8_ready=True, forced=f" {forced.upper()} ") == forced


def test_auto_or_empty_means_choose():
    assert choose_precision(AVX512_BF16, True, "auto") == "bf16"
    assert choose_precision(AVX2_ONLY, False, "") == "f32"


def test_an_unknown_precision_is_one_clear_error():
    with pytest.raises(ValueError, match=r"OCR_PRECISION='fp8': choose one of bf16, int8, f32 or auto"):
        choose_precision(AVX2_ONLY, True, "fp8")


def test_cpu_flags_reads_the_first_flags_line():
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 avx512_bf16\n\nflags\t: other\n"
    assert cpu_flags(text) == frozenset({"fpu", "avx2", "avx512_bf16"})
    assert cpu_flags("processor : 0\n") == frozenset()


@pytest.mark.parametrize(("flags", "want"), [(AVX2_ONLY, "int8"), (AVX512_BF16, "bf16")])
def test_the_served_precision_follows_the_cpu_and_the_environment(monkeypatch, tmp_path, flags, want):
    """default_precision (what /v1/models and so a calibration's fingerprint report) on both ISA
    paths: the CPU's flags, the int8 files' presence, and $OCR_PRECISION forcing it."""
    from reference_service import quantise
    from reference_service.models import DET_FILE, REC_FILE

    monkeypatch.setattr(runtimes, "cpu_flags", lambda: flags)
    monkeypatch.setenv(quantise.INT8_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    for name in (DET_FILE, REC_FILE):
        for f in quantise.int8_files(name):
            (tmp_path / f).write_text("")
    assert default_precision("openvino") == want
    for forced in ("f32", "int8", "bf16"):
        monkeypatch.setenv(PRECISION_ENV, forced)
        assert default_precision("openvino") == forced
    monkeypatch.setenv(PRECISION_ENV, "auto")
    assert default_precision("openvino") == want
    assert default_precision("onnxruntime") == "f32"  # ONNX Runtime has no precision switch


def test_forcing_int8_without_the_files_names_the_missing_file(monkeypatch, tmp_path):
    from reference_service import quantise
    from reference_service.models import REC_FILE
    from reference_service.runtimes import make_runner

    monkeypatch.setenv(quantise.INT8_DIR_ENV, str(tmp_path))
    monkeypatch.setenv(PRECISION_ENV, "int8")
    with pytest.raises(FileNotFoundError, match=r"OCR_PRECISION=int8: .*_rec_infer_int8\.xml is missing"):
        make_runner(tmp_path / REC_FILE, "openvino")


def test_calibration_pages_are_generated_not_the_golden_sets():
    """int8 calibration (quantise.py) uses its own seeded pages: none of their lines is a line
    of the golden or the hard set, and the same seed gives the same pages."""
    from reference_service.accuracy import load_manifest
    from reference_service.golden.generate import HARD_DIR, HARD_SEED, render, render_hard
    from reference_service.quantise import CALIBRATION_SEED

    main, hard = load_manifest(), load_manifest(HARD_DIR)
    assert CALIBRATION_SEED not in (main["seed"], hard["seed"], HARD_SEED)
    golden_lines = {
        line["text"] for m in (main, hard) for doc in m["documents"].values() for line in doc["lines"]
    }
    calib_lines = {line["text"] for i in range(8) for line in render(i, CALIBRATION_SEED)[1]["lines"]}
    calib_lines |= {line["text"] for i in range(4) for line in render_hard(i, CALIBRATION_SEED)[1]["lines"]}
    assert len(calib_lines) > 40
    assert not calib_lines & golden_lines
    assert render_hard(3, CALIBRATION_SEED)[0] == render_hard(3, CALIBRATION_SEED)[0]


def test_int8_file_names_and_pinned_sums_cover_both_models():
    from reference_service.models import DET_FILE, REC_FILE
    from reference_service.quantise import INT8_SHA256, int8_files

    names = {f for m in (DET_FILE, REC_FILE) for f in int8_files(m)}
    assert names == set(INT8_SHA256)
    assert int8_files(REC_FILE) == ("ch_PP-OCRv4_rec_infer_int8.xml", "ch_PP-OCRv4_rec_infer_int8.bin")
    assert all(len(s) == 64 and int(s, 16) >= 0 for s in INT8_SHA256.values())


def test_the_spec_records_the_pinned_int8_sums():
    """specs/ocr-reference.yaml carries each int8 file's SHA-256 beside its model's entry."""
    from reference_service.quantise import INT8_SHA256

    from .conftest import ROOT

    spec = (ROOT / "specs" / "ocr-reference.yaml").read_text()
    for name, digest in INT8_SHA256.items():
        assert f"# {name} {digest}" in spec, name


_SPACE_SCRIPT = r"""
import json, sys
import numpy as np
from rapidocr_onnxruntime.ch_ppocr_rec.utils import CTCLabelDecode
from reference_service import models

rec = models.Recogniser.__new__(models.Recogniser)
rec.decode = CTCLabelDecode(character=["a", "b"])  # blank, a, b, space
# Time steps: a, then blank 0.5 vs space 0.4 (a narrow gap), then b.
preds = np.array([[[0.1, 0.8, 0.05, 0.05], [0.5, 0.05, 0.05, 0.4], [0.1, 0.05, 0.8, 0.05]]], np.float32)
rec.run = lambda x: preds
crops = np.zeros((1, 48, 320, 3), np.uint8)
out = {}
for w in (1.0, 8.0):
    models.SPACE_BOOST = w
    out[str(w)] = rec(crops, np.array([[320]]))
print(json.dumps(out))
"""


def test_the_space_weight_restores_a_narrow_space_and_keeps_the_models_confidence():
    """models.Recogniser's CTC decoding, run in the service's venv with a crafted output: at
    weight 1 blank (0.5) beats space (0.4) and "ab" comes out; at 8 the space wins, and the
    line's confidence is the mean of the model's own probabilities (0.8, 0.4, 0.8)."""
    import json
    import subprocess

    from .conftest import ROOT, SERVICE_PY

    if not SERVICE_PY.exists():
        pytest.skip("reference_service/.venv is missing; run `make reference-venv`")
    out = subprocess.run(
        [str(SERVICE_PY), "-c", _SPACE_SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout)
    assert got["1.0"][0][0] == "ab" and got["1.0"][0][1] == pytest.approx(0.8)
    assert got["8.0"][0][0] == "a b" and got["8.0"][0][1] == pytest.approx((0.8 + 0.4 + 0.8) / 3)
