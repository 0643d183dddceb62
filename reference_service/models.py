"""The detector and recogniser (PP-OCRv4 ONNX files from rapidocr-onnxruntime).

Each instance owns one runner (runtimes.py: ONNX Runtime, OpenVINO or PyTorch) with one
intra-op thread: on 2 cores onnxruntime's default thread pool oversubscribed and halved
throughput (measured, MEASUREMENTS.md).
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

import numpy as np

from .runtimes import make_runner

MODEL_DIR_ENV = "OCR_MODEL_DIR"
# CTC decoding weighs the space class by this before taking each time step's most likely
# character (confidences stay the model's own probabilities). PP-OCRv4's "ch" recogniser drops
# the narrow spaces of small Latin text: on the hard set (20-26 px) nearly every error was a
# missing space. Measured in-process, all pages, int8 / bf16 (MEASUREMENTS.md "The AVX2
# path"): weight 1 -> hard set 0.9811 / 0.9849, main 0.9965 / 0.9992; 8 -> hard 0.9959 /
# 0.9973, main 0.9992 / 0.9995; flat from 5 to 15. $OCR_REC_SPACE_BOOST overrides (1 = off).
SPACE_BOOST = float(os.environ.get("OCR_REC_SPACE_BOOST", "8"))
DET_FILE = "ch_PP-OCRv4_det_infer.onnx"
REC_FILE = "ch_PP-OCRv4_rec_infer.onnx"


def model_dir() -> Path:
    """Folder holding the ONNX files: $OCR_MODEL_DIR, else the rapidocr wheel's models/."""
    if os.environ.get(MODEL_DIR_ENV):
        return Path(os.environ[MODEL_DIR_ENV])
    import rapidocr_onnxruntime

    return Path(rapidocr_onnxruntime.__file__).parent / "models"


@cache
def model_sha256(name: str) -> str:
    """SHA-256 of a model file (recorded in the spec and checked after a rollback)."""
    return hashlib.sha256((model_dir() / name).read_bytes()).hexdigest()


class Detector:
    """DB text detector: uint8 BGR pages (already resized, sides multiple of 32) to boxes."""

    def __init__(self, threads: int = 1, backend: str = "onnxruntime") -> None:
        from rapidocr_onnxruntime.ch_ppocr_det.utils import DBPostProcess

        self.run = make_runner(model_dir() / DET_FILE, backend, threads)
        # RapidOCR 1.4.4 config.yaml Det section.
        self.post = DBPostProcess(
            thresh=0.3,
            box_thresh=0.5,
            max_candidates=1000,
            unclip_ratio=1.6,
            score_mode="fast",
            use_dilation=True,
        )

    def __call__(self, pages: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """pages: uint8 [n, h, w, 3], one shape. Returns per page (boxes [k, 4, 2], scores [k])."""
        from .pipeline import order_points_clockwise

        x = (pages.astype(np.float32) / 255.0 - 0.5) / 0.5
        preds = self.run(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
        h, w = pages.shape[1:3]
        out = []
        for i in range(pages.shape[0]):
            boxes, scores = self.post(preds[i : i + 1], (h, w))
            kept_b, kept_s = [], []
            for box, score in zip(boxes, scores, strict=False):
                box = order_points_clockwise(np.asarray(box, dtype=np.float32))
                box[:, 0] = np.clip(box[:, 0], 0, w - 1)
                box[:, 1] = np.clip(box[:, 1], 0, h - 1)
                if np.linalg.norm(box[0] - box[1]) <= 3 or np.linalg.norm(box[0] - box[3]) <= 3:
                    continue
                kept_b.append(box)
                kept_s.append(score)
            out.append(
                (np.array(kept_b, dtype=np.float32).reshape(-1, 4, 2), np.array(kept_s, dtype=np.float32))
            )
        return out


class Recogniser:
    """CRNN/SVTR line recogniser with CTC decoding: uint8 [n, 48, W, 3] crops to text."""

    def __init__(self, threads: int = 1, backend: str = "onnxruntime") -> None:
        from rapidocr_onnxruntime.ch_ppocr_rec.utils import CTCLabelDecode

        self.run = make_runner(model_dir() / REC_FILE, backend, threads)
        chars = self.run.metadata("character").splitlines()
        self.decode = CTCLabelDecode(character=chars)

    def __call__(self, crops: np.ndarray, widths: np.ndarray) -> list[tuple[str, float]]:
        """crops: uint8 [n, 48, W, 3]; widths: int [n] true widths. Returns (text, confidence)."""
        x = (crops.astype(np.float32) / 255.0 - 0.5) / 0.5
        for i, w in enumerate(np.asarray(widths).reshape(-1)):
            x[i, :, int(w) :, :] = 0.0  # RapidOCR pads with zeros after normalising
        preds = self.run(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
        weighted = preds.copy()
        weighted[..., len(self.decode.character) - 1] *= SPACE_BOOST  # CTCLabelDecode puts " " last
        idx = weighted.argmax(axis=2)
        prob = np.take_along_axis(preds, idx[..., None], axis=2)[..., 0]
        return [(t, float(c)) for t, c in self.decode.decode(idx, prob, is_remove_duplicate=True)]
