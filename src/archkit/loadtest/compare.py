"""Predicted against measured: per stage and end to end, the prediction's error in percent.

The prediction is the whole-pipeline model (`archkit.perf.pipeline.predict`) at the rate the
load test offered.
Error is (predicted − measured) / measured: positive when the model promised too much latency
(or too high a knee), negative when it was optimistic. A miss of more than ~15 % is a bug in the
model or the spec (DESIGN: the prediction loop), never noise to hide.
"""

from __future__ import annotations

from archkit.spec.model import Spec

E2E_KEYS = ("p50_ms", "p95_ms", "p99_ms", "mean_ms")
STAGE_KEYS = ("p50_ms", "p99_ms", "mean_ms")


def error_pct(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or measured is None or measured == 0:
        return None
    return round((predicted - measured) / measured * 100.0, 1)


def predict(spec: Spec, env: str | None, rate_rps: float | None) -> dict:
    """{"source", "end_to_end": {p50_ms...}, "stages": {id: {p50_ms...}}, "knee_rps"} at this rate."""
    from archkit.perf.pipeline import predict as pipeline_predict

    got = pipeline_predict(spec, rate_rps=rate_rps)
    return {
        "source": "archkit.perf.pipeline.predict",
        "end_to_end": {k: getattr(got, k) for k in E2E_KEYS},
        "stages": {s.stage: {k: getattr(s, k) for k in STAGE_KEYS} for s in got.stages},
        "knee_rps": got.knee_rps,
    }


def _rows(pred: dict, meas: dict, keys: tuple[str, ...]) -> dict:
    out = {}
    for k in keys:
        p, m = pred.get(k), meas.get(k)
        if p is None or m is None:
            continue
        out[k] = {"predicted": round(float(p), 3), "measured": m, "error_pct": error_pct(float(p), m)}
    return out


def compare(spec: Spec, measured: dict, env: str | None) -> dict:
    """The prediction at the offered rate next to what the run measured."""
    rate = measured.get("offered_rps")
    if measured.get("kind") == "stress":
        rate = (measured.get("stress") or {}).get("knee_offered_rps") or rate
    try:
        pred = predict(spec, env, rate)
    except Exception as exc:  # a model bug must not lose the measurement: report it in the result
        return {"error": f"prediction failed: {type(exc).__name__}: {exc}"}
    out: dict = {
        "source": pred["source"],
        "rate_rps": rate,
        "end_to_end": _rows(pred.get("end_to_end") or {}, measured.get("end_to_end") or {}, E2E_KEYS),
        "stages": {},
    }
    for sid, m in (measured.get("stages") or {}).items():
        rows = _rows((pred.get("stages") or {}).get(sid) or {}, m, STAGE_KEYS)
        if rows:
            out["stages"][sid] = rows
    if measured.get("stress") is not None:
        knee = measured["stress"].get("knee_rps")
        out["knee_rps"] = {
            "predicted": pred.get("knee_rps"),
            "measured": knee,
            "error_pct": error_pct(pred.get("knee_rps"), knee),
        }
    return out


def _fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "—"
    return f"{x:.4g}{unit}" if isinstance(x, float) else f"{x}{unit}"


def _table_rows(cmp: dict) -> list[list[str]]:
    rows = []
    for key, r in (cmp.get("end_to_end") or {}).items():
        rows.append(
            ["end to end", key, _fmt(r["predicted"]), _fmt(r["measured"]), _fmt(r["error_pct"], " %")]
        )
    for sid, parts in (cmp.get("stages") or {}).items():
        for key, r in parts.items():
            rows.append(
                [f"stage {sid}", key, _fmt(r["predicted"]), _fmt(r["measured"]), _fmt(r["error_pct"], " %")]
            )
    knee = cmp.get("knee_rps")
    if knee:
        rows.append(
            [
                "stress knee",
                "req/s",
                _fmt(knee["predicted"]),
                _fmt(knee["measured"]),
                _fmt(knee["error_pct"], " %"),
            ]
        )
    return rows


def section(cmp: dict | None) -> tuple[str, list[str], list[list[str]], list[str]] | None:
    """The report section: predicted, measured and the error in %, per stage and end to end."""
    if not cmp:
        return None
    if cmp.get("error"):
        return ("Predicted vs measured", ["", ""], [], [cmp["error"]])
    return (
        "Predicted vs measured",
        ["what", "value", "predicted", "measured", "error"],
        _table_rows(cmp),
        [
            f"Prediction at {_fmt(cmp.get('rate_rps'), ' req/s')} from {cmp.get('source')}; error = "
            "(predicted − measured) / measured. A miss beyond ~15 % is a bug in the model or the spec."
        ],
    )


def prediction_lines(cmp: dict | None) -> list[str]:
    """One line per compared value, for the terminal."""
    if not cmp:
        return []
    if cmp.get("error"):
        return [f"note: {cmp['error']}"]
    # the terminal gets the headline numbers (the report has every row): end to end, the knee,
    # and one figure per stage (its P50, else its mean)
    out, seen = [], set()
    for w, k, p, m, e in _table_rows(cmp):
        if w == "end to end" and k not in ("p50_ms", "p99_ms"):
            continue
        if w.startswith("stage ") and (w in seen or k == "p99_ms"):
            continue
        seen.add(w)
        out.append(f"predicted {w} {k}: {p} vs measured {m} ({e})")
    return out


def measured_extras(m: dict, keys: tuple[str, ...]) -> dict:
    """What measured.json adds for the open model and the prediction (report.py's schema)."""
    out: dict = {}
    fs = (m.get("end_to_end") or {}).get("from_send")
    if fs:
        out["end_to_end_from_send"] = {k: fs.get(k) for k in keys if fs.get(k) is not None}
    g = m.get("generator")
    if g:
        out["generator"] = {
            k: g.get(k) for k in ("arrival", "max_inflight", "scheduled", "sent", "dropped", "kept_up")
        }
    if m.get("predicted"):
        out["predicted"] = m["predicted"]
    return out
