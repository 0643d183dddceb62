"""Correctness of the OCR service on a CPU without AVX-512: run inside bench/avx2_guest.sh.

    bench/avx2_guest.sh --accel tcg --out DIR -- reference_service/.venv/bin/python \
        bench/avx2_guest_check.py --json DIR/check.json [--pages N] [--budget-s S]

It starts the service with the precision left to it (``OCR_PRECISION`` unset: the service
chooses from the CPU's ISA flags), reads what ``/v1/models`` reports, then, page by page
until ``--pages`` or ``--budget-s`` runs out: the served outputs held to the golden outputs
recorded for that precision (``verify-rollback``'s tolerances: text equal, boxes within 3 px,
confidences within 0.02), and the character accuracy of the served text and of Tesseract on
the same pages. Under TCG (an emulated CPU) the times mean nothing; the outputs do: they come
from OpenVINO's AVX2 kernels, which a CPU with AVX-512 never runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_ocr import GOLDEN, HARD, Served, golden_names, tesseract_text
from reference_service.accuracy import corpus_accuracy
from reference_service.runtimes import BF16_FLAGS, cpu_flags
from reference_service.verify_rollback import EXPECTED, differences


def kernels() -> dict[str, dict]:
    """What OpenVINO compiles each model to at the precision the service would choose: the
    executable graph's primitive types (``jit_avx2_I8`` / ``brgconv_avx512_1x1_I8`` name the ISA)."""
    from collections import Counter

    from reference_service.models import DET_FILE, REC_FILE, model_dir
    from reference_service.runtimes import make_runner

    out = {}
    for name in (DET_FILE, REC_FILE):
        runner = make_runner(model_dir() / name, "openvino")
        ops = runner.request.get_compiled_model().get_runtime_model().get_ops()
        kinds = Counter(str(op.get_rt_info()["primitiveType"].astype(str)) for op in ops)
        out[name] = {"precision": runner.precision, "primitives": dict(sorted(kinds.items()))}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, required=True, help="write the result here")
    ap.add_argument("--pages", type=int, default=60, help="golden pages at most, spread over the set")
    ap.add_argument("--hard-pages", type=int, default=0, help="hard-set pages at most, spread over the set")
    ap.add_argument("--budget-s", type=float, default=900.0, help="stop taking pages after this long")
    args = ap.parse_args(argv)

    flags = cpu_flags()
    r: dict = {
        "cpu_flags": {
            "avx2": "avx2" in flags,
            "avx512": sorted(f for f in flags if f.startswith("avx512")),
            "bf16": sorted(flags & BF16_FLAGS),
        }
    }
    t0 = time.monotonic()
    r["kernels"] = kernels()
    print("kernels", json.dumps(r["kernels"]), flush=True)
    served = Served()  # no OCR_PRECISION in its environment: the service's own choice
    try:
        r["ready_s"] = round(served.ready_s, 1)
        with urllib.request.urlopen(f"{served.url}/v1/models", timeout=60) as resp:
            r["runtime"] = json.loads(resp.read())["runtime"]
        precision = r["runtime"]["precision"]
        wanted = json.loads(EXPECTED.read_text())["outputs"].get(precision, {})
        deadline = time.monotonic() + args.budget_s
        for label, folder, limit in (("golden", GOLDEN, args.pages), ("hard", HARD, args.hard_pages)):
            served_text: dict[str, str] = {}
            tess_text: dict[str, str] = {}
            diffs: dict[str, list[str]] = {}
            every = golden_names(folder)
            # Spread over the set (every k-th page) when only some pages fit the budget.
            for name in every[:: max(1, len(every) // max(limit, 1))][:limit]:
                if time.monotonic() > deadline:
                    break
                got = served.ocr((folder / name).read_bytes())
                served_text[name] = got["text"]
                tess_text[name] = tesseract_text(folder / name)
                if label == "golden" and name in wanted and (d := differences(got, wanted[name])):
                    diffs[name] = d
                print(f"{time.monotonic() - t0:7.1f} s {label} {name}: {len(diffs)} off recorded", flush=True)
            names = list(served_text)
            if not names:
                continue
            r[label] = {
                "pages": len(names),
                "served_accuracy": corpus_accuracy(served_text, folder, only=names),
                "tesseract_accuracy": corpus_accuracy(tess_text, folder, only=names),
            }
            if label == "golden":
                r[label]["recorded_outputs_at"] = precision if wanted else None
                r[label]["pages_off_recorded_outputs"] = diffs
            print(label, json.dumps(r[label]), flush=True)
    finally:
        served.stop()
    r["wall_s"] = round(time.monotonic() - t0, 1)
    args.json.write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in r.items() if k not in ("golden", "hard")}, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
