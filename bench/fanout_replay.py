"""The baseline predicted with and without a stage's measured fan-out table (issue 29).

Predicts the spec at one rate (the baseline's, `archkit.perf.pipeline.predict`: the simulation at
its default requests and seed) with a calibration, twice: as written, and with every stage's
`fanout` removed (each visit then `items_per_request` items in ⌈items / items_per_call⌉ calls),
and prints end-to-end and per-stage P50 / P99 side by side:

    python bench/fanout_replay.py specs/ocr-reference.yaml --env cpu \\
        --calibration tests/perf/data/ocr-reference-cpu-zen5-1922.json --rate 2
"""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--env", required=True)
    ap.add_argument("--calibration")
    ap.add_argument("--rate", type=float, required=True, help="req/s (the baseline level's)")
    a = ap.parse_args(argv)

    from archkit.perf.pipeline import predict
    from archkit.plans.context import prepare

    spec = prepare(a.spec, a.env, a.calibration).spec
    # a deep copy keeps what the calibration applied (a dump and re-validation of the spec loses part)
    bare = spec.model_copy(deep=True)
    for st in bare.dataflow.stages:
        st.fanout = None
    runs = {"with the table": predict(spec, rate_rps=a.rate), "without": predict(bare, rate_rps=a.rate)}
    print(f"| at {a.rate:g} req/s | " + " | ".join(runs) + " |")
    print("|---|" + "---:|" * len(runs))
    rows = [("end to end", key, [getattr(r, key) for r in runs.values()]) for key in ("p50_ms", "p99_ms")]
    for sid in [s.stage for s in runs["with the table"].stages]:
        for key in ("p50_ms", "p99_ms"):
            rows.append(
                (
                    sid,
                    key,
                    [
                        next((getattr(s, key) for s in r.stages if s.stage == sid), None)
                        for r in runs.values()
                    ],
                )
            )
    for what, key, vals in rows:
        cells = " | ".join("—" if v is None else f"{v:.1f}" for v in vals)
        print(f"| {what} {key[:3].upper()} ms | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
