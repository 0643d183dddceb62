"""int8 models made reproducibly from the shipped ONNX files (post-training quantisation).

``python -m reference_service quantise [--check]`` writes OpenVINO IR (``.xml`` + ``.bin``)
of both models, quantised with NNCF's ``nncf.quantize`` (MinMax statistics, fast bias
correction, the ``MIXED`` preset: symmetric int8 weights, asymmetric activations), into the int8 cache folder (``int8_dir``:
$OCR_INT8_DIR, else ``~/.cache/archkit/ocr-int8/<NNCF version>/``), outside the clone.

Calibration data are pages GENERATED for this (``golden.generate.render`` and
``render_hard`` with seed CALIBRATION_SEED, never the golden sets' seeds 6 and 18), run through
the served pipeline's own pre-processing with the f32 detector giving the line crops: the
recogniser is calibrated on what it will see. Everything is seeded, one thread: the produced
files are byte-identical run to run, and their SHA-256 are pinned in INT8_SHA256 (and in
specs/ocr-reference.yaml's model entries); ``--check`` fails when they differ.

Asymmetric activations because PP-LCNet's hard-swish outputs reach below zero: with the
symmetric ``PERFORMANCE`` preset the golden set fell to 0.9911, with ``MIXED`` 0.9971 (f32:
0.9991; all 60 pages, MEASUREMENTS.md "int8 on the AVX2 path").
Only Conv/MatMul-type inputs are quantised (NNCF's default scheme: Softmax, LayerNorm and
the element-wise ops stay in float): quantising the recogniser's SVTR attention block too
lost 3 points of accuracy (MEASUREMENTS.md "int8 quantisation", seed 000 §5.10).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

INT8_DIR_ENV = "OCR_INT8_DIR"
CALIBRATION_SEED = 1007  # not a golden-set seed (main 6, hard 18)
CALIBRATION_PAGES = 32  # 24 main-style + 8 hard-style pages; ~250 recogniser crops
# SHA-256 of the files `quantise` produces with nncf==3.4.0 and openvino==2026.4.1 (pinned in
# requirements.txt); a different version gives other bytes, which `--check` reports.
INT8_SHA256 = {
    "ch_PP-OCRv4_det_infer_int8.bin": "aa61600233485f45b13dd03886519bbcf826672e604fd0d76a0f7fb5d76c9481",
    "ch_PP-OCRv4_det_infer_int8.xml": "83dc7cc13e0ad6d604029f0c895e501c1a3e1b6e9030e663f80b4424021bd64d",
    "ch_PP-OCRv4_rec_infer_int8.bin": "e9a94b1be0a79aec6a03dc2ef8aaa4d48acd1ed65e2d0f855e25691dfe464c55",
    "ch_PP-OCRv4_rec_infer_int8.xml": "80e46a9a546001868e52d6cb40a2066a59b5154721431b803a1396924f4bc8d3",
}


def int8_dir() -> Path:
    """Where the int8 IR files live: $OCR_INT8_DIR, else a per-NNCF-version user cache."""
    if os.environ.get(INT8_DIR_ENV):
        return Path(os.environ[INT8_DIR_ENV])
    return Path.home() / ".cache" / "archkit" / "ocr-int8" / "nncf-3.4.0"


def int8_file(onnx_name: str) -> str:
    """The IR file name of the int8 model made from ``onnx_name``."""
    return onnx_name.removesuffix(".onnx") + "_int8.xml"


def int8_files(onnx_name: str) -> tuple[str, str]:
    """The IR pair (.xml, .bin) of the int8 model made from ``onnx_name``."""
    xml = int8_file(onnx_name)
    return xml, xml.removesuffix(".xml") + ".bin"


def have_int8() -> bool:
    """Whether both models' int8 files are present (auto picks int8 only then)."""
    from .models import DET_FILE, REC_FILE

    return all((int8_dir() / f).is_file() for n in (DET_FILE, REC_FILE) for f in int8_files(n))


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def calibration_pages(n: int = CALIBRATION_PAGES, seed: int = CALIBRATION_SEED) -> Iterator[np.ndarray]:
    """``n`` generated BGR pages: three quarters like the golden set, a quarter like the hard set."""
    import cv2

    from .golden.generate import render, render_hard

    hard = n // 4
    for i in range(n - hard):
        img, _ = render(i, seed)
        yield cv2.cvtColor(np.asarray(img.convert("RGB")), cv2.COLOR_RGB2BGR)
    for i in range(hard):
        data, _ = render_hard(i, seed)
        yield cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def calibration_inputs() -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(detector inputs, recogniser inputs) as the served pipeline feeds them, float32 NCHW."""
    from . import pipeline as P
    from .models import Detector

    det = Detector(1, "onnxruntime")  # the f32 reference gives the crops
    det_x, rec_x = [], []
    for img in calibration_pages():
        boxed, _ = P.letterbox(img)
        page, rh, rw = P.det_resize(boxed)
        det_x.append(
            np.ascontiguousarray(((page.astype(np.float32) / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)[None])
        )
        boxes = det(page[None])[0][0]
        scale = np.array([rw, rh], dtype=np.float32)
        for b in P.sorted_boxes(boxes):
            c = P.rec_resize(P.crop_box(boxed, b * scale))
            batch, widths = P.pad_crops([c], P.rec_bucket(c.shape[1]))
            x = (batch.astype(np.float32) / 255.0 - 0.5) / 0.5
            x[0, :, int(widths[0, 0]) :, :] = 0.0
            rec_x.append(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    return det_x, rec_x


def quantise(out: Path) -> dict[str, str]:
    """Write both int8 models to ``out``; returns {file name: SHA-256}."""
    import nncf
    import openvino as ov

    from .models import DET_FILE, REC_FILE, model_dir

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    det_x, rec_x = calibration_inputs()
    core = ov.Core()
    core.set_property("CPU", {"INFERENCE_NUM_THREADS": 1, "INFERENCE_PRECISION_HINT": "f32"})
    out.mkdir(parents=True, exist_ok=True)
    sums = {}
    for name, data in ((DET_FILE, det_x), (REC_FILE, rec_x)):
        model = core.read_model(str(model_dir() / name))
        q = nncf.quantize(
            model,
            nncf.Dataset(data),
            preset=nncf.QuantizationPreset.MIXED,
            subset_size=len(data),
            fast_bias_correction=True,
        )
        xml, bin_ = int8_files(name)
        tmp = out / f".{xml}.tmp.xml"
        ov.save_model(q, str(tmp), compress_to_fp16=False)
        # Atomic: the service never sees half a model.
        os.replace(tmp.with_suffix(".bin"), out / bin_)
        os.replace(tmp, out / xml)
        for f in (xml, bin_):
            sums[f] = sha256(out / f)
    return sums


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m reference_service quantise", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--out", type=Path, default=None, help="folder for the IR files (default: int8_dir())")
    ap.add_argument("--check", action="store_true", help="exit 1 when a SHA-256 differs from INT8_SHA256")
    ap.add_argument("--if-missing", action="store_true", help="do nothing when all four files are there")
    args = ap.parse_args(argv)
    out = args.out or int8_dir()
    if args.if_missing and all((out / f).is_file() for f in INT8_SHA256):
        print(f"int8 models already in {out}")
        return 0
    sums = quantise(out)
    for f, s in sorted(sums.items()):
        print(f"{s}  {out / f}")
    wrong = sorted(f for f, s in sums.items() if INT8_SHA256.get(f) != s)
    for f in wrong:
        print(
            f"{out / f}: SHA-256 {sums[f]} differs from the pinned {INT8_SHA256.get(f, 'none')} "
            "(another NNCF/OpenVINO version or CPU kernels); the measured figures are the pinned files'",
            file=sys.stderr,
        )
    return 1 if args.check and wrong else 0
