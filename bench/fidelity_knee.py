"""The knee and the shed share past it, predicted vs measured (issue 29; `bench/fidelity.sh` step 6).

Reads the stress level's result (`archkit loadtest --level stress --report DIR`: DIR/result.json),
predicts every step's offered rate with the same calibrated spec (`archkit.perf.pipeline.predict`,
what `archkit capacity --rate A:B:STEP` prints), and prints one table per step and the knee:

- the knee, predicted: the closed-form throughput ceiling (the first resource to reach 100 %);
  measured: the most requests per second the service answered with 200 at any step (past the
  knee the gateway's admission limit sheds the rest with fast 429s, so the answered rate
  stays at the ceiling), with the search's own bracket (the last step that met the stop
  criterion and the first that did not);
- the shed share past the knee: the share of a step's requests answered 429/503, predicted as
  `shed_share` (refused by the admission limit) + `failed_share` (full queues).

    python bench/fidelity_knee.py SPEC --env cpu --calibration CAL --stress out/stress/result.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SHED_STATUSES = ("429", "503")


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}g}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec")
    ap.add_argument("--env", required=True)
    ap.add_argument("--calibration")
    ap.add_argument("--stress", required=True, help="the stress run's result.json")
    ap.add_argument("--requests", type=int, default=20_000, help="simulated requests per step")
    a = ap.parse_args(argv)

    from archkit.perf.pipeline import predict
    from archkit.plans.context import prepare

    spec = prepare(a.spec, a.env, a.calibration).spec
    res = json.loads(Path(a.stress).read_text(encoding="utf-8"))
    measured = res.get("measured") or {}
    phases = [p for p in measured.get("phases") or [] if p.get("requests")]
    if not phases:
        print(f"{a.stress}: no stress steps measured")
        return 1
    stress = measured.get("stress") or {}
    print(
        "| offered req/s | answered req/s measured | predicted | shed share measured | predicted | P95 ms measured | predicted |"
    )
    print("|---|---|---|---|---|---|---|")
    best, knee_pred, rows = 0.0, None, []
    for p in phases:
        rate = float(p["offered_rps"])
        dur = float(p.get("duration_s") or 0) or None
        ok = p["requests"] - int(p.get("errors") or 0)
        answered = ok / dur if dur else p.get("throughput_rps")
        shed = sum(int(p.get("statuses", {}).get(s, 0)) for s in SHED_STATUSES) / p["requests"]
        got = predict(spec, rate_rps=rate, requests=a.requests)
        knee_pred = got.knee_rps
        pshed = got.shed_share + got.failed_share
        best = max(best, answered or 0.0)
        rows.append((rate, shed, pshed))
        print(
            f"| {rate:.3g} | {_fmt(answered)} | {_fmt(got.throughput_rps)} | {100 * shed:.1f} % | "
            f"{100 * pshed:.1f} % | {_fmt(p.get('p95_ms'))} | {_fmt(got.p95_ms)} |"
        )
    print()
    err = f"{(knee_pred - best) / best * 100:+.1f} %" if knee_pred and best else "—"
    bracket = stress.get("knee_bracket_rps")
    print(
        f"knee: predicted {_fmt(knee_pred)} req/s (closed-form ceiling) vs measured {_fmt(best)} req/s "
        f"answered at most ({err}; target ±20 %)"
        + (
            f"; the search's bracket {bracket[0]}–{bracket[1]} req/s offered"
            if bracket and None not in bracket
            else ""
        )
    )
    past = [(r, s, ps) for r, s, ps in rows if knee_pred and r > knee_pred] or [
        (r, s, ps) for r, s, ps in rows if s > 0.01
    ]
    for r, s, ps in past:
        print(
            f"shed share at {r:.3g} req/s (past the knee): predicted {100 * ps:.1f} % vs measured "
            f"{100 * s:.1f} % ({100 * (ps - s):+.1f} points; target ±5 points)"
        )
    if not past:
        print("no step past the knee: raise the search's max_rps to measure the shed share")
    return 0


if __name__ == "__main__":
    sys.exit(main())
