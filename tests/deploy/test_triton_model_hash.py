"""VT229: the model file Triton serves from a repository has the SHA-256 the spec pins (seed 004 §4.1).

The repository is what `archkit render` writes for specs/ocr-reference.yaml plus the reference
service's real ONNX files (the rapidocr wheel in reference_service/.venv), whose hashes the spec pins.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from archkit.spec.model import Spec
from archkit.verify import Status
from archkit.verify.triton_repo import check_repository
from tests.conftest import OCR_SPEC, ROOT
from tests.deploy.helpers import load_spec, render_one

MODELS = sorted(
    (ROOT / "reference_service" / ".venv").glob("lib/python3*/site-packages/rapidocr_onnxruntime/models")
)
pytestmark = pytest.mark.skipif(
    not MODELS, reason="reference_service/.venv (the rapidocr wheel) is not installed"
)
DET, REC = "ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx"


def _repo(tmp_path: Path, files: dict[str, str]) -> tuple[Spec, Path]:
    """Rendered configs, and `model/version/model.onnx` <- the named ONNX file of the wheel."""
    spec = load_spec(OCR_SPEC)
    repo = render_one(spec, "triton", tmp_path, "ocr-reference.yaml", None)
    for where, name in files.items():
        target = repo / where / "model.onnx"
        target.parent.mkdir(parents=True)
        shutil.copyfile(MODELS[0] / name, target)
    return spec, repo


def _hash_findings(spec, repo):
    return [(f.object, f.status, f.message) for f in check_repository(spec, repo) if f.code == "VT229"]


def test_the_real_files_have_the_pinned_hashes(tmp_path):
    spec, repo = _repo(tmp_path, {"ocr_detector/1": DET, "ocr_recogniser/1": REC})
    assert _hash_findings(spec, repo) == [
        ("model ocr_detector", Status.PASS, "1/model.onnx has the pinned sha256"),
        ("model ocr_recogniser", Status.PASS, "1/model.onnx has the pinned sha256"),
    ]


def test_a_swapped_file_and_a_newer_version_are_drift(tmp_path):
    # the detector folder holds the recogniser; the recogniser's pinned file is version 1 but Triton's
    # 'latest 1' policy serves version 2, which holds another file
    spec, repo = _repo(tmp_path, {"ocr_detector/1": REC, "ocr_recogniser/1": REC, "ocr_recogniser/2": DET})
    # the spec's version "1" names a folder; without it the version policy (latest 1) decides
    next(
        st.model for st in spec.dataflow.stages if st.model and st.model.name == "ocr_recogniser"
    ).version = None
    found = _hash_findings(spec, repo)
    assert [(o, s) for o, s, _ in found] == [
        ("model ocr_detector", Status.DRIFT),
        ("model ocr_recogniser", Status.DRIFT),
    ]
    assert found[0][2] == (
        "model 'ocr_detector': Triton serves version 1, whose files do not have the pinned sha256 d2a7720d45a5… "
        "(1/model.onnx 48fc40f24f6d…)"
    )
    assert found[1][2].endswith("; the pinned file is 1/model.onnx, a version Triton does not serve")


def test_configs_only_are_not_judged(tmp_path):
    spec, repo = _repo(tmp_path, {})
    assert _hash_findings(spec, repo) == []
