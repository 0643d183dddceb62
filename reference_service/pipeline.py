"""Pre- and post-processing shared by the gateway, the Triton models and the benchmark.

Pure numpy/OpenCV; follows RapidOCR 1.4.4 (PP-OCRv4) so that served and in-process
results match. Images are BGR uint8 arrays, as RapidOCR's loader produces.
"""

from __future__ import annotations

import math
import os

import cv2
import numpy as np

# RapidOCR's Det.limit_type "max": the longer side is shrunk to this, never enlarged ("min"/736,
# RapidOCR's default, upscales short wide pages: 3.4x slower and less accurate). 640 rather
# than 960 (measured, MEASUREMENTS.md "ablation"): the detector costs ~area, so 0.45x the CPU,
# and accuracy rose on both golden sets (0.9952 -> 0.9977; hard set 0.9758 -> 0.9871): at
# 960 the DB head splits or merges boxes on 28-40 px text more often than at 640.
# $OCR_DET_LIMIT_SIDE overrides it (bench/bench_ocr.py --ablation measures 960 against 640).
DET_LIMIT_SIDE = int(os.environ.get("OCR_DET_LIMIT_SIDE", "640"))
REC_HEIGHT = 48
REC_MIN_WIDTH = 320  # PP-OCRv4 rec_img_shape [3, 48, 320]
# Crops are padded to a multiple of this so Triton can batch equal widths. Buckets of 32 px
# cost the same on the main set (-2 % .. -9 % recogniser CPU) but lost a point on the hard set
# (0.9849 -> 0.9743): the zero padding after a line helps the recogniser end it
# (MEASUREMENTS.md "ablation"). $OCR_REC_WIDTH_BUCKET overrides.
REC_WIDTH_BUCKET = int(os.environ.get("OCR_REC_WIDTH_BUCKET", "160"))
# Line crops are resized to height 48 and their width scaled by this factor beyond the
# aspect ratio: the recogniser's cost is ~linear in width, and CTC still has ~2.5 time steps
# (8 px each) per character of the 20-40 px golden-set fonts. Measured on the 60 golden pages
# (in-process, OpenVINO bf16): 1.0 -> 0.9977, 0.75 -> 0.9992, 0.6 -> 0.9914; hard set 0.9871
# -> 0.9849 at 0.75; recogniser CPU per page 176 -> 138 ms. $OCR_REC_WIDTH_SCALE overrides.
REC_WIDTH_SCALE = float(os.environ.get("OCR_REC_WIDTH_SCALE", "0.75"))
REC_MAX_WIDTH = 2560
TEXT_SCORE = 0.5  # RapidOCR Global.text_score: lines below this confidence are dropped


def det_resize(img: np.ndarray, limit: int = DET_LIMIT_SIDE) -> tuple[np.ndarray, float, float]:
    """Resize so the longer side is at most ``limit`` and both sides are multiples of 32.

    Returns the resized image and the (height, width) ratios original/resized.
    """
    h, w = img.shape[:2]
    ratio = min(1.0, float(limit) / max(h, w))
    rh = max(32, int(round(int(h * ratio) / 32) * 32))
    rw = max(32, int(round(int(w * ratio) / 32) * 32))
    resized = cv2.resize(img, (rw, rh)) if (rh, rw) != (h, w) else img
    return np.ascontiguousarray(resized), h / rh, w / rw


def letterbox(img: np.ndarray, min_height: int = 30, max_ratio: float = 8.0) -> tuple[np.ndarray, int]:
    """Pad very short or very wide images top and bottom (RapidOCR's maybe_add_letterbox)."""
    h, w = img.shape[:2]
    if h > min_height and w / h <= max_ratio:
        return img, 0
    new_h = max(int(w / max_ratio), min_height) * 2
    pad = int(abs(new_h - h) / 2)
    return cv2.copyMakeBorder(img, pad, pad, 0, 0, cv2.BORDER_CONSTANT, value=(0, 0, 0)), pad


def order_points_clockwise(pts: np.ndarray) -> np.ndarray:
    """Order a quadrilateral's corners as top-left, top-right, bottom-right, bottom-left."""
    xs = pts[np.argsort(pts[:, 0]), :]
    left, right = xs[:2, :], xs[2:, :]
    tl, bl = left[np.argsort(left[:, 1]), :]
    tr, br = right[np.argsort(right[:, 1]), :]
    return np.array([tl, tr, br, bl], dtype=np.float32)


def sorted_boxes(boxes: np.ndarray) -> list[np.ndarray]:
    """Sort boxes top to bottom, then left to right within a 10 px band (RapidOCR's order)."""
    out = sorted(boxes, key=lambda b: (b[0][1], b[0][0]))
    for i in range(len(out) - 1):
        for j in range(i, -1, -1):
            if abs(out[j + 1][0][1] - out[j][0][1]) < 10 and out[j + 1][0][0] < out[j][0][0]:
                out[j], out[j + 1] = out[j + 1], out[j]
            else:
                break
    return out


def crop_box(img: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Perspective-crop one text box; tall crops are rotated to horizontal."""
    points = points.astype(np.float32)
    w = int(max(np.linalg.norm(points[0] - points[1]), np.linalg.norm(points[2] - points[3])))
    h = int(max(np.linalg.norm(points[0] - points[3]), np.linalg.norm(points[1] - points[2])))
    w, h = max(w, 1), max(h, 1)
    dst = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    m = cv2.getPerspectiveTransform(points, dst)
    crop = cv2.warpPerspective(img, m, (w, h), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC)
    if crop.shape[0] * 1.0 / crop.shape[1] >= 1.5:
        crop = np.rot90(crop)
    return crop


def rec_resize(crop: np.ndarray) -> np.ndarray:
    """Resize a line crop to height 48, its width scaled by REC_WIDTH_SCALE (capped)."""
    h, w = crop.shape[:2]
    rw = min(REC_MAX_WIDTH, max(1, math.ceil(REC_HEIGHT * w / float(h) * REC_WIDTH_SCALE)))
    return cv2.resize(np.ascontiguousarray(crop), (rw, REC_HEIGHT))


def rec_bucket(width: int) -> int:
    """Padded width for a resized crop: at least 320, rounded up to a multiple of the bucket."""
    return max(REC_MIN_WIDTH, math.ceil(width / REC_WIDTH_BUCKET) * REC_WIDTH_BUCKET)


def rec_calls(widths: list[int], max_batch: int) -> list[tuple[int, list[int]]]:
    """How the gateway sends a page's resized crops (their widths, in order) to the recogniser:
    (padded width, crop indices) per request: crops grouped by width bucket (`rec_bucket`, in the
    order each bucket first appears), at most ``max_batch`` crops a request. The one grouping:
    `triton_client.recognise` sends it, `bench/calibration_inputs.py` counts it."""
    groups: dict[int, list[int]] = {}
    for i, w in enumerate(widths):
        groups.setdefault(rec_bucket(w), []).append(i)
    return [
        (width, idx[s : s + max_batch])
        for width, idx in groups.items()
        for s in range(0, len(idx), max_batch)
    ]


def pad_crops(resized: list[np.ndarray], width: int) -> tuple[np.ndarray, np.ndarray]:
    """Stack resized crops into one uint8 [n, 48, width, 3] array plus their true widths."""
    batch = np.zeros((len(resized), REC_HEIGHT, width, 3), dtype=np.uint8)
    widths = np.zeros((len(resized), 1), dtype=np.int32)
    for i, c in enumerate(resized):
        batch[i, :, : c.shape[1]] = c
        widths[i, 0] = c.shape[1]
    return batch, widths
