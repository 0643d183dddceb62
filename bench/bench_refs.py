"""Benchmark the reference walk (archkit.spec.refs.build) on the generated 1,000-stage spec.

Usage: .venv/bin/python bench/bench_refs.py [--stages 1000] [--runs 7]
Times, in one process: `build` (ids and references of every marked field, one walk), the
model's plain `walk` over every object (its peer: the least any walk can cost), and AK102 +
AK103 together on a spec whose index is built. Medians of CPU time. Record the result in
docs/benchmarks.md under "## References walk".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))


def _median_ms(fn, runs: int) -> float:
    out = []
    for _ in range(runs):
        c = time.process_time()
        fn()
        out.append(time.process_time() - c)
    return statistics.median(out) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stages", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from archkit.checks.registry import Context, all_rules
    from archkit.spec import load_file
    from archkit.spec.model import walk
    from archkit.spec.refs import build, refs_of
    from bench_check import generate

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(generate(args.stages), encoding="utf-8")
        spec = load_file(path).spec
        assert spec is not None
    index = build(spec)
    print(
        f"spec: {args.stages} stages, {sum(1 for _ in walk(spec))} objects, "
        f"{len(index.references)} references, {sum(len(v) for v in index.members.values())} ids"
    )
    refs_of(spec)
    rules = [all_rules()[c] for c in ("AK102", "AK103")]

    def ak102_103() -> None:
        for r in rules:
            list(r().check(Context(spec, rule=r)))

    walk_ms = _median_ms(lambda: sum(1 for _ in walk(spec)), args.runs)
    build_ms = _median_ms(lambda: build(spec), args.runs)
    rules_ms = _median_ms(ak102_103, args.runs)
    print(f"model walk (peer):      {walk_ms:7.1f} ms CPU")
    print(f"refs build:             {build_ms:7.1f} ms CPU  ({build_ms / walk_ms:.2f}x the plain walk)")
    print(f"AK102 + AK103 (built):  {rules_ms:7.1f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
