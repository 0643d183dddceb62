"""Benchmark the whole-pipeline simulation: 1,000,000 requests through specs/ocr-reference.yaml.

Usage: .venv/bin/python bench/bench_simulate.py [--requests 1000000] [--runs 3] [--peer 20000]
Prints the median wall and CPU time of the compiled simulation (numba; the first, compiling
call is timed apart), and the same kernel run as plain Python on `--peer` requests (the peer,
scaled per request), with the machine's load average before and after. Record the result in
docs/benchmarks.md under "## Pipeline simulation".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from archkit.perf import pipesim_kernel  # noqa: E402
from archkit.perf.pipeline import prepare  # noqa: E402
from archkit.perf.pipesim import simulate_pipeline  # noqa: E402
from archkit.spec import load_file  # noqa: E402


def _timed(fn: object, *args: object, **kw: object) -> tuple[float, float, object]:
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args, **kw)  # type: ignore[operator]
    return time.perf_counter() - w, time.process_time() - c, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--peer", type=int, default=20_000, help="requests for the plain-Python peer run")
    ap.add_argument("--rate", type=float, default=0.5, help="req/s (the spec's design rate)")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    spec, lm = prepare(load_file(ROOT / "specs" / "ocr-reference.yaml").spec, "cpu")
    try:
        import numba  # noqa: F401

        compiled = True
    except ImportError:
        compiled = False
    w, c, _ = _timed(simulate_pipeline, spec, lm, args.rate, requests=1000)
    print(f"numba: {'yes' if compiled else 'no'}; first call (compiles or loads the cache): {w:.2f} s")
    walls, cpus = [], []
    res = None
    for _ in range(args.runs):
        w, c, res = _timed(simulate_pipeline, spec, lm, args.rate, requests=args.requests)
        walls.append(w)
        cpus.append(c)
    assert res is not None
    print(
        f"{args.requests:,} requests at {args.rate:g} req/s: median wall {statistics.median(walls):.2f} s, "
        f"median CPU {statistics.median(cpus):.2f} s (runs: {', '.join(f'{x:.2f}' for x in walls)}); "
        f"P50 {res.p50_ms:.0f} ms, P95 {res.p95_ms:.0f} ms, P99 {res.p99_ms:.0f} ms"  # type: ignore[attr-defined]
    )
    if compiled:
        fast = pipesim_kernel.run
        pipesim_kernel.run = pipesim_kernel.run_python  # the same source as plain Python: the peer
        try:
            w, c, _ = _timed(simulate_pipeline, spec, lm, args.rate, requests=args.peer)
        finally:
            pipesim_kernel.run = fast
        per_req = statistics.median(cpus) / args.requests
        print(
            f"peer (plain Python, {args.peer:,} requests): wall {w:.2f} s, CPU {c:.2f} s; "
            f"compiled is {c / args.peer / per_req:.0f}× faster per request (CPU)"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
