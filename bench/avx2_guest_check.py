"""Correctness of the OCR service on a CPU without AVX-512: run inside bench/avx2_guest.sh.

    bench/avx2_guest.sh --accel tcg --out DIR -- reference_service/.venv/bin/python \
        bench/avx2_guest_check.py --json DIR/check.json [--inproc] [--pages N] [--hard-pages N]

With ``OCR_PRECISION`` unset (the service chooses from the CPU's ISA flags) it records: the
precision chosen and the kernels OpenVINO compiles each model to at it (the executable
graph's primitive types name the ISA: ``jit_avx2_I8`` against ``jit_avx512_I8``); then, page by
page until ``--pages`` or ``--budget-s`` runs out, the outputs held to the golden outputs
recorded for that precision (verify-rollback's tolerances), and the character accuracy of the
output and of Tesseract on the same pages. The outputs come from the served service (its
``/v1/models`` precision), or with ``--inproc`` from the service's own detector and recogniser
in this process (reference_service/scripts/compare_backends.py's pipeline, whose text equals
the served text at the same precision): under TCG, an emulated CPU, Triton's start alone takes
longer than the serve command's ready timeout allows, and times mean nothing there anyway.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "reference_service" / "scripts"))

from bench_ocr import GOLDEN, HARD, Served, golden_names, tesseract_text
from reference_service.accuracy import corpus_accuracy
from reference_service.runtimes import BF16_FLAGS, cpu_flags, default_precision
from reference_service.verify_rollback import EXPECTED, differences


def primitives(runner) -> dict[str, int]:
    """The primitive types of an OpenVINO runner's executable graph, counted."""
    ops = runner.request.get_compiled_model().get_runtime_model().get_ops()
    return dict(sorted(Counter(str(op.get_rt_info()["primitiveType"].astype(str)) for op in ops).items()))


def inproc_engine(r: dict) -> Callable[[bytes], dict]:
    """The service's detector and recogniser in this process at its own precision."""
    from compare_backends import crops_of

    from reference_service import pipeline as P
    from reference_service.gateway import decode_image
    from reference_service.models import DET_FILE, REC_FILE, Detector, Recogniser

    det, rec = Detector(1, "openvino"), Recogniser(1, "openvino")
    r["runtime"] = {"precision": rec.run.precision, "engine": "in-process (no Triton)"}
    r["kernels"] = {
        DET_FILE: {"precision": det.run.precision, "primitives": primitives(det.run)},
        REC_FILE: {"precision": rec.run.precision, "primitives": primitives(rec.run)},
    }

    def ocr(body: bytes) -> dict:
        lines = []
        for c in crops_of(det, decode_image(body)):
            batch, widths = P.pad_crops([c], P.rec_bucket(c.shape[1]))
            text, conf = rec(batch, widths)[0]
            if conf >= P.TEXT_SCORE and text.strip():
                lines.append(text)
        return {"text": "\n".join(lines)}  # no boxes: the recorded texts are compared

    return ocr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, required=True, help="write the result here")
    ap.add_argument("--inproc", action="store_true", help="the service's models in this process, not served")
    ap.add_argument("--pages", type=int, default=60, help="golden pages at most, spread over the set")
    ap.add_argument("--hard-pages", type=int, default=0, help="hard-set pages at most, spread over the set")
    ap.add_argument("--budget-s", type=float, default=900.0, help="stop taking pages after this long")
    ap.add_argument("--ready-timeout", type=float, default=1800.0, help="the served service's start, s")
    args = ap.parse_args(argv)

    flags = cpu_flags()
    r: dict = {
        "cpu_flags": {
            "avx2": "avx2" in flags,
            "avx512": sorted(f for f in flags if f.startswith("avx512")),
            "bf16": sorted(flags & BF16_FLAGS),
        },
        "default_precision": default_precision("openvino"),
    }
    t0 = time.monotonic()
    served = None
    if args.inproc:
        ocr = inproc_engine(r)
    else:
        # No OCR_PRECISION in its environment: the service's own choice.
        served = Served(extra=("--ready-timeout", str(args.ready_timeout)))
        r["ready_s"] = round(served.ready_s, 1)
        with urllib.request.urlopen(f"{served.url}/v1/models", timeout=60) as resp:
            r["runtime"] = json.loads(resp.read())["runtime"]
        ocr = served.ocr
    print("runtime", json.dumps(r["runtime"]), json.dumps(r.get("kernels")), flush=True)
    try:
        precision = r["runtime"]["precision"]
        wanted = json.loads(EXPECTED.read_text())["outputs"].get(precision, {})
        deadline = time.monotonic() + args.budget_s
        for label, folder, limit in (("golden", GOLDEN, args.pages), ("hard", HARD, args.hard_pages)):
            texts: dict[str, str] = {}
            tess: dict[str, str] = {}
            diffs: dict[str, list[str]] = {}
            every = golden_names(folder)
            # Spread over the set (every k-th page) when only some pages fit the budget.
            for name in every[:: max(1, len(every) // max(limit, 1))][:limit]:
                if time.monotonic() > deadline:
                    break
                got = ocr((folder / name).read_bytes())
                texts[name] = got["text"]
                tess[name] = tesseract_text(folder / name)
                if label == "golden" and name in wanted:
                    want = wanted[name] if "lines" in got else {"text": wanted[name]["text"], "lines": []}
                    if d := differences({"lines": [], **got}, want):
                        diffs[name] = d
                print(f"{time.monotonic() - t0:7.1f} s {label} {name}: {len(diffs)} off recorded", flush=True)
            if texts:
                r[label] = {
                    "pages": sorted(texts),
                    "accuracy": corpus_accuracy(texts, folder, only=list(texts)),
                    "tesseract_accuracy": corpus_accuracy(tess, folder, only=list(tess)),
                }
                if label == "golden":
                    r[label]["recorded_outputs_at"] = precision if wanted else None
                    r[label]["pages_off_recorded_outputs"] = diffs
                print(label, json.dumps(r[label]), flush=True)
    finally:
        if served is not None:
            served.stop()
    r["wall_s"] = round(time.monotonic() - t0, 1)
    args.json.write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
