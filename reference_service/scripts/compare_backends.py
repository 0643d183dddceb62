"""Run the OCR pipeline in-process under each inference backend and compare the results.

    reference_service/.venv/bin/python reference_service/scripts/compare_backends.py \
        [--backends onnxruntime,openvino,torch] [--pages 6] [--golden reference_service/golden]
        [--precisions bf16,int8,f32]   # OpenVINO once per precision ($OCR_PRECISION)

For each backend that is installed: the golden pages' text and character accuracy, the
recogniser's largest logit difference from ONNX Runtime on the same crops, and the CPU
milliseconds per page of the two models. Prints one JSON object (tests read it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from reference_service import pipeline as P  # noqa: E402
from reference_service.accuracy import GOLDEN_DIR, corpus_accuracy, load_manifest  # noqa: E402
from reference_service.gateway import decode_image  # noqa: E402
from reference_service.models import Detector, Recogniser  # noqa: E402
from reference_service.runtimes import BACKENDS, PRECISION_ENV, available  # noqa: E402


def crops_of(det: Detector, img: np.ndarray) -> list[np.ndarray]:
    """The page's line crops, resized to the recogniser's height, in reading order."""
    boxed, pad = P.letterbox(img)
    page, rh, rw = P.det_resize(boxed)
    boxes = det(page[None])[0][0]
    scale = np.array([rw, rh], dtype=np.float32)
    return [P.rec_resize(P.crop_box(boxed, b * scale)) for b in P.sorted_boxes(boxes)]


def run(backend: str, names: list[str], golden: Path) -> tuple[dict, dict[str, list[np.ndarray]]]:
    det, rec = Detector(1, backend), Recogniser(1, backend)
    texts: dict[str, str] = {}
    crops: dict[str, list[np.ndarray]] = {}
    cpu = det_cpu = 0.0
    for n in names:
        img = decode_image((golden / n).read_bytes())
        t = time.process_time()
        page_crops = crops_of(det, img)
        det_cpu += time.process_time() - t
        lines = []
        for c in page_crops:
            batch, widths = P.pad_crops([c], P.rec_bucket(c.shape[1]))
            text, conf = rec(batch, widths)[0]
            if conf >= P.TEXT_SCORE and text.strip():
                lines.append(text)
        cpu += time.process_time() - t
        texts[n] = "\n".join(lines)
        crops[n] = page_crops
    result = {
        "precision": rec.run.precision,
        "accuracy": corpus_accuracy(texts, golden, only=names),
        "cpu_ms_per_page": cpu / len(names) * 1e3,
        "detect_and_crop_cpu_ms_per_page": det_cpu / len(names) * 1e3,
        "texts": texts,
    }
    return result, crops


def logits_gap(backend: str, crops: list[np.ndarray]) -> tuple[float, float]:
    """Against ONNX Runtime on the same crops: the largest probability difference, and the
    fraction of time steps whose most likely character (what CTC decoding reads) agrees."""
    ref, other = Recogniser(1, "onnxruntime"), Recogniser(1, backend)
    gap, same, steps = 0.0, 0, 0
    for c in crops:
        batch, widths = P.pad_crops([c], P.rec_bucket(c.shape[1]))
        x = (batch.astype(np.float32) / 255.0 - 0.5) / 0.5
        x[0, :, int(widths[0, 0]) :, :] = 0.0
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
        a, b = ref.run(x), other.run(x)
        gap = max(gap, float(np.abs(a - b).max()))
        same += int((a.argmax(-1) == b.argmax(-1)).sum())
        steps += a.shape[0] * a.shape[1]
    return gap, same / max(steps, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--pages", type=int, default=6)
    ap.add_argument("--golden", type=Path, default=GOLDEN_DIR)
    ap.add_argument(
        "--precisions", default="", help="OpenVINO only: one run per precision, e.g. bf16,int8,f32"
    )
    ap.add_argument("--no-texts", action="store_true", help="leave the pages' texts out of the output")
    args = ap.parse_args(argv)
    if args.precisions:
        return by_precision(args)
    names = sorted(load_manifest(args.golden)["documents"])[: args.pages]
    out: dict = {"pages": len(names), "backends": {}, "missing": []}
    first_crops: list[np.ndarray] = []
    for b in args.backends.split(","):
        if not available(b):
            out["missing"].append(b)
            continue
        res, crops = run(b, names, args.golden)
        if not first_crops:
            first_crops = crops[names[0]]
        if b != "onnxruntime" and available("onnxruntime"):
            gap, agree = logits_gap(b, first_crops)
            res["max_prob_gap_vs_onnxruntime"] = gap
            res["argmax_agreement_vs_onnxruntime"] = agree
        out["backends"][b] = res
    print(json.dumps(out, indent=1))
    return 0


def by_precision(args) -> int:
    """OpenVINO's pipeline at each precision of ``--precisions``: accuracy and CPU per page."""
    names = sorted(load_manifest(args.golden)["documents"])[: args.pages]
    out: dict = {"pages": len(names), "golden": str(args.golden), "precisions": {}}
    for p in args.precisions.split(","):
        os.environ[PRECISION_ENV] = p
        res, _ = run("openvino", names, args.golden)
        if args.no_texts:
            del res["texts"]
        out["precisions"][p] = res
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
