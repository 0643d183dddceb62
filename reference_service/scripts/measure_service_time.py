"""Measure the detector's and recogniser's service time per batch (in-process, 1 thread each).

Feeds ``specs/ocr-reference.yaml`` (dataflow.stages[*].model.service_time) and
MEASUREMENTS.md. Run with the service venv from the repository root:
    reference_service/.venv/bin/python reference_service/scripts/measure_service_time.py
A batch is counted in pages for both models: the recogniser's batch of n pages is all the
line crops of n pages (the gateway sends a page's lines together).
"""

from __future__ import annotations

import collections
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from reference_service import pipeline as P
from reference_service.models import Detector, Recogniser
from reference_service.runtimes import choose
from reference_service.settings import CPU

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "images"


def timed(fn, repeats: int) -> dict:
    """Median wall and thread-CPU milliseconds. With one intra-op thread onnxruntime and
    OpenVINO compute in the calling thread, so CPU time is the service time without the
    neighbours' contention."""
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.thread_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    return {"wall": round(statistics.median(wall) * 1e3, 1), "cpu": round(statistics.median(cpu) * 1e3, 1)}


def main() -> None:
    backend = choose(CPU.backends)  # $OCR_BACKEND overrides, as for the service
    det, rec = Detector(1, backend), Recogniser(1, backend)
    pages = {}
    for p in sorted(GOLDEN.glob("*.png")):
        img = np.asarray(Image.open(p).convert("RGB"))[:, :, ::-1]
        page, rh, rw = P.det_resize(img)
        pages[p.name] = (img, page, rh, rw)
    shapes = collections.Counter(v[1].shape for v in pages.values())
    shape = shapes.most_common(1)[0][0]
    same = [v for v in pages.values() if v[1].shape == shape][:4]
    out: dict = {
        "backend": backend,
        "precision": rec.run.precision,
        "det_shape": list(shape),
        "det_ms": {},
        "rec_ms": {},
        "lines_per_page": 0.0,
    }
    for n in (1, 2, 4):
        batch = np.stack([same[i % len(same)][1] for i in range(n)])
        out["det_ms"][n] = timed(lambda b=batch: det(b), 5)
    # Line crops of the first pages, grouped like the gateway does (one request per width bucket).
    crops_per_page = []
    for img, page, rh, rw in list(pages.values())[:8]:
        boxes, _ = det(page[None])[0]
        scale = np.array([rw, rh], dtype=np.float32)
        crops_per_page.append([P.rec_resize(P.crop_box(img, b * scale)) for b in P.sorted_boxes(boxes)])
    out["lines_per_page"] = round(statistics.mean(len(c) for c in crops_per_page), 2)

    def run_pages(n: int) -> None:
        crops = [c for page in crops_per_page[:n] for c in page]
        groups = collections.defaultdict(list)
        for c in crops:
            groups[P.rec_bucket(c.shape[1])].append(c)
        for width, cs in groups.items():
            rec(*P.pad_crops(cs, width))

    for n in (1, 2, 4):
        out["rec_ms"][n] = timed(lambda k=n: run_pages(k), 3)
    # The recogniser's Triton batch unit is one line crop: time batches of crops padded to the
    # most common width bucket, as Triton's dynamic batcher forms them.
    all_crops = [c for page in crops_per_page for c in page]
    bucket = collections.Counter(P.rec_bucket(c.shape[1]) for c in all_crops).most_common(1)[0][0]
    out["rec_bucket_px"] = bucket
    out["rec_crops_ms"] = {}
    for n in (1, 2, 4, 8):
        chosen = [all_crops[i % len(all_crops)] for i in range(n)]
        chosen = [c[:, :bucket] for c in chosen]
        batch, widths = P.pad_crops(chosen, bucket)
        out["rec_crops_ms"][n] = timed(lambda b=batch, w=widths: rec(b, w), 3)
    out["load_average"] = Path("/proc/loadavg").read_text().split()[:3]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
