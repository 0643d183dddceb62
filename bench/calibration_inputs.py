"""Write realistic `archkit calibrate --inputs` items for the reference OCR service.

Run with the reference service's interpreter (it uses the gateway's own preprocessing):

    reference_service/.venv/bin/python bench/calibration_inputs.py OUT_DIR [--page PNG] [--triton URL]

Writes OUT_DIR/ocr_detector/image.npy (a page letterboxed and resized exactly as the gateway
sends it, without the batch dimension), OUT_DIR/ocr_detector/mix/NN/image.npy with
OUT_DIR/ocr_detector/mix.json (every golden page so prepared, weight 1 each: the batch sweep's mix)
and OUT_DIR/ocr_recogniser/{crops,widths}.npy (one line
crop padded to its width bucket, as the gateway sends each crop), plus raw .bin copies under
OUT_DIR/perf_analyzer/MODEL/ for `perf_analyzer --input-data`. The crops come from the
detector's boxes, asked of the live Triton at --triton.

The items stand for the load the reference spec sends (its `document` scenario: the golden
pages, drawn evenly), because the model multiplies their times by the request rate:
- the detector's batch sweep runs every golden page in turn (`mix.json`, weight 1 each, as the
  load test draws them evenly), so its times are the mix's as the load test sees them: on the
  one page of the mean area the detector took 26.8 ms a request, on the mix 33.0 ms (its time is
  not a function of the page's area alone). The single page (the concurrency sweep's and
  perf_analyzer's) is the golden page whose detector input has the area nearest the pages'
  mean. doc_000, the default before issue 29's fix, is 512 x 640 px, 1.44x the mean of
  227,669 px; calibrated on it the detector took 43.3 ms a page where the load test's pages
  took 33.2 ms (n = 399), and the model's ceiling and shed share past the knee were too
  pessimistic by that much;
- the recogniser's crop is the median-width line of all the golden pages, padded (with zeros,
  as the gateway pads to its 160 px buckets) to the mean padded width of every line, rounded to
  32 px: the recogniser's work grows about linearly with the padded width (reference_service/
  pipeline.py, REC_WIDTH_SCALE), so that crop costs what the mean line does, where one bucket
  would be off by up to 80 px.
`--page` calibrates on that one page instead (its page, and its own lines for the crop).

shapes.json also holds the recogniser's fan-out per page (`fanout`): each page's crops and the
requests the gateway sends for them (its own grouping, `pipeline.rec_calls`: by width bucket, at
most --rec-max-batch crops a request), and those counted as the spec's `fanout.table` rows
[crops, requests, pages] (issue 29: a page is not 6.88 crops in pairs, and the P99 is the pages
with the most lines).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLDEN = ROOT / "reference_service/golden/images"
PAD_STEP = 32  # the recogniser's input width in multiples of its downsampling (8 px) and more


def nearest_mean(values: list[float]) -> int:
    """Index of the value nearest the values' mean (the first on a tie)."""
    mean = sum(values) / len(values)
    return min(range(len(values)), key=lambda i: (abs(values[i] - mean), i))


def padded_width(crop_width: int, buckets: list[int]) -> int:
    """The width the calibration crop is padded to: the lines' mean padded width in whole PAD_STEPs,
    never less than the crop's own width (in whole PAD_STEPs)."""
    mean = sum(buckets) / len(buckets)
    return PAD_STEP * max(round(mean / PAD_STEP), math.ceil(crop_width / PAD_STEP))


def page_mix(names: list[str]) -> list[dict]:
    """mix.json's items: each page in its own folder (mix/00, mix/01, ... in the names' order),
    weight 1 each, since the load test's scenario draws its pages evenly."""
    width = max(2, len(str(len(names) - 1)))
    return [{"path": f"mix/{i:0{width}d}", "weight": 1, "page": name} for i, name in enumerate(names)]


def fanout(pages: list[tuple[str, list[int]]], max_batch: int) -> dict:
    """The recogniser's fan-out: per page [name, crops, requests] (the gateway's grouping of the
    crops' resized widths), and the table of [crops, requests, pages] rows in ascending order; a
    page without a line sends nothing and is counted apart (`no_lines`)."""
    from reference_service import pipeline as P

    per_page = [[name, len(widths), len(P.rec_calls(widths, max_batch))] for name, widths in pages]
    rows = Counter((crops, calls) for _, crops, calls in per_page if crops > 0)
    return {
        "rec_max_batch": max_batch,
        "per_page": per_page,
        "table": [[crops, calls, n] for (crops, calls), n in sorted(rows.items())],
        "no_lines": sum(1 for _, crops, _ in per_page if crops == 0),
    }


def prepare_pages(files: list[Path]) -> tuple[list[np.ndarray], list[tuple], list[float]]:
    """Each page decoded, its detector input (letterboxed and resized as the gateway sends it, with
    the ratios and padding to map boxes back) and that input's area in pixels."""
    from reference_service import gateway as G

    imgs = [G.decode_image(f.read_bytes()) for f in files]
    prepared = [G._prepare_det(img) for img in imgs]
    return imgs, prepared, [float(p[0].shape[0] * p[0].shape[1]) for p in prepared]


def main(argv: list[str] | None = None) -> int:
    from reference_service import gateway as G
    from reference_service import pipeline as P
    from reference_service.settings import Settings

    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--page", type=Path, default=None, help="one page instead of the golden set's")
    ap.add_argument("--triton", default="127.0.0.1:8000")
    ap.add_argument("--token-file", type=Path, default=None)
    ap.add_argument(
        "--rec-max-batch",
        type=int,
        default=None,
        help="crops a recogniser request carries at most (default: the cpu profile's, as the gateway)",
    )
    args = ap.parse_args(argv)

    import tritonclient.http as tc

    headers = {"triton-access-token": args.token_file.read_text().strip()} if args.token_file else None
    client = tc.InferenceServerClient(url=args.triton)

    def crops_of(img: np.ndarray, prepared: tuple) -> list[np.ndarray]:
        page, rh, rw, pad = prepared
        inp = tc.InferInput("image", [1, *page.shape], "UINT8")
        inp.set_data_from_numpy(page[None])
        res = client.infer("ocr_detector", [inp], headers=headers)
        n = int(res.as_numpy("count")[0, 0])
        boxes = res.as_numpy("boxes")[0, :n].reshape(-1, 4, 2)
        return G._crop_all(img, boxes, rh, rw, pad, None)[1]

    files = [args.page] if args.page else sorted(GOLDEN.glob("doc_*.png"))
    imgs, prepared, areas = prepare_pages(files)
    det = nearest_mean(areas)
    page_lines = [crops_of(img, p) for img, p in zip(imgs, prepared, strict=True)]
    lines = [c for page_crops in page_lines for c in page_crops]
    if not lines:
        raise SystemExit(f"{files[0]}: the detector found no text line")
    buckets = [P.rec_bucket(c.shape[1]) for c in lines]
    mean_bucket = sum(buckets) / len(buckets)
    # the median-width line: a typical line, not the longest or the shortest
    crop = sorted(lines, key=lambda c: c.shape[1])[len(lines) // 2]
    padded = padded_width(crop.shape[1], buckets)
    batch, widths = P.pad_crops([crop], padded)
    page = prepared[det][0]
    items = {"ocr_detector": {"image": page}, "ocr_recogniser": {"crops": batch[0], "widths": widths[0]}}
    shapes = {}
    for model, arrays in items.items():
        d = args.out / model
        d.mkdir(parents=True, exist_ok=True)
        pa = args.out / "perf_analyzer" / model
        pa.mkdir(parents=True, exist_ok=True)
        for name, arr in arrays.items():
            np.save(d / f"{name}.npy", np.ascontiguousarray(arr))
            (pa / name).write_bytes(np.ascontiguousarray(arr).tobytes())
        shapes[model] = {name: list(arr.shape) for name, arr in arrays.items()}
    if not args.page:  # the detector's mix: every golden page
        entries = page_mix([f.name for f in files])
        for entry, prep in zip(entries, prepared, strict=True):
            d = args.out / "ocr_detector" / entry["path"]
            d.mkdir(parents=True, exist_ok=True)
            np.save(d / "image.npy", np.ascontiguousarray(prep[0]))
        (args.out / "ocr_detector" / "mix.json").write_text(json.dumps({"items": entries}, indent=1))
    chosen = {
        "pages": len(files),
        "detector_mix": 0 if args.page else len(files),
        "detector_page": str(files[det].relative_to(ROOT) if files[det].is_relative_to(ROOT) else files[det]),
        "detector_area_px": {"chosen": int(areas[det]), "mean": round(sum(areas) / len(areas), 1)},
        "recogniser_padded_px": {"chosen": padded, "mean": round(mean_bucket, 1)},
    }
    max_batch = args.rec_max_batch or Settings().rec_request_crops
    fan = fanout(
        [(f.name, [c.shape[1] for c in pc]) for f, pc in zip(files, page_lines, strict=True)], max_batch
    )
    (args.out / "shapes.json").write_text(
        json.dumps(
            {
                "lines_on_page": round(len(lines) / len(files), 2),
                "chosen": chosen,
                "shapes": shapes,
                "fanout": fan,
            },
            indent=1,
        )
    )
    print(json.dumps(shapes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
