"""Write realistic `archkit calibrate --inputs` items for the reference OCR service.

Run with the reference service's interpreter (it uses the gateway's own preprocessing):

    reference_service/.venv/bin/python bench/calibration_inputs.py OUT_DIR [--page PNG] [--triton URL]

Writes OUT_DIR/ocr_detector/image.npy (a golden page letterboxed and resized exactly as the
gateway sends it, without the batch dimension) and OUT_DIR/ocr_recogniser/{crops,widths}.npy
(one line crop padded to its width bucket, as the gateway sends each crop), plus raw .bin
copies under OUT_DIR/perf_analyzer/MODEL/ for `perf_analyzer --input-data`. The recogniser's
crop comes from the detector's boxes on the same page, asked of the live Triton at --triton.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    from reference_service import gateway as G
    from reference_service import pipeline as P

    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--page", type=Path, default=ROOT / "reference_service/golden/images/doc_000.png")
    ap.add_argument("--triton", default="127.0.0.1:8000")
    ap.add_argument("--token-file", type=Path, default=None)
    args = ap.parse_args(argv)

    import tritonclient.http as tc

    img = G.decode_image(args.page.read_bytes())
    page, rh, rw, pad = G._prepare_det(img)
    headers = {"triton-access-token": args.token_file.read_text().strip()} if args.token_file else None
    client = tc.InferenceServerClient(url=args.triton)
    inp = tc.InferInput("image", [1, *page.shape], "UINT8")
    inp.set_data_from_numpy(page[None])
    res = client.infer("ocr_detector", [inp], headers=headers)
    n = int(res.as_numpy("count")[0, 0])
    boxes = res.as_numpy("boxes")[0, :n].reshape(-1, 4, 2)
    _, crops = G._crop_all(img, boxes, rh, rw, pad, None)
    if not crops:
        raise SystemExit(f"{args.page}: the detector found no text line")
    # the median-width crop: a typical line, not the longest or the shortest
    crop = sorted(crops, key=lambda c: c.shape[1])[len(crops) // 2]
    batch, widths = P.pad_crops([crop], P.rec_bucket(crop.shape[1]))
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
    (args.out / "shapes.json").write_text(
        json.dumps({"lines_on_page": len(crops), "shapes": shapes}, indent=1)
    )
    print(json.dumps(shapes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
