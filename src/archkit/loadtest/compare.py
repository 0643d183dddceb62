"""Predicted against measured: per stage and end to end, the prediction's error in percent.

The prediction is the whole-pipeline model (`archkit.perf.pipeline.predict`) at the rate the
load test offered; where that module is not available the older composition stands in (the sum
of stage P50s along the critical path, per-stage ceilings for the knee) and the result says so.
Error is (predicted − measured) / measured: positive when the model promised too much latency
(or too high a knee), negative when it was optimistic. A miss of more than ~15 % is a bug in the
model or the spec (DESIGN: the prediction loop), never noise to hide.
"""

from __future__ import annotations

from typing import Any

from archkit.spec.model import Spec

E2E_KEYS = ("p50_ms", "p95_ms", "p99_ms", "mean_ms")
STAGE_KEYS = ("p50_ms", "p99_ms", "mean_ms")


def error_pct(predicted: float | None, measured: float | None) -> float | None:
    if predicted is None or measured is None or measured == 0:
        return None
    return round((predicted - measured) / measured * 100.0, 1)


def _get(obj: Any, *names: str) -> Any:
    """A field of a dataclass, a dict or an object, by the first name present."""
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if not isinstance(obj, dict) and hasattr(obj, name):
            return getattr(obj, name)
    return None


def _as_dict(obj: Any) -> dict:
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return obj
    if hasattr(obj, "as_dict"):
        return obj.as_dict()
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def predict(spec: Spec, env: str | None, rate_rps: float | None) -> dict:
    """{"source", "end_to_end": {p50_ms...}, "stages": {id: {p50_ms...}}, "knee_rps"} at this rate."""
    import importlib

    try:
        pipeline: Any = importlib.import_module("archkit.perf.pipeline")
    except ImportError:
        pipeline = None
    fn = getattr(pipeline, "predict", None)
    if fn is not None:
        got = fn(spec, rate_rps=rate_rps)
        e2e = _as_dict(_get(got, "end_to_end", "e2e")) or {k: _get(got, k) for k in E2E_KEYS}
        stages_raw = _get(got, "stages") or {}
        if isinstance(stages_raw, list | tuple):
            stages_raw = {_get(s, "stage", "id"): s for s in stages_raw}
        stages = {str(k): {key: _get(v, key) for key in STAGE_KEYS} for k, v in stages_raw.items()}
        knee = _get(got, "knee_rps", "ceiling_rps", "saturation_rps")
        return {
            "source": "archkit.perf.pipeline.predict",
            "end_to_end": e2e,
            "stages": stages,
            "knee_rps": knee,
        }
    return _fallback(spec)


def _fallback(spec: Spec) -> dict:
    """The composition that predates the pipeline model: budgets along the critical path."""
    from archkit.perf.capacity import model_capacities
    from archkit.perf.latency import critical_path

    path = critical_path(spec)
    e2e = {"p50_ms": round(path.p50_sum, 3), "p99_ms": round(path.p99_rss, 3)} if path else {}
    stages = {
        s.id: {"p50_ms": s.p50_ms, "p99_ms": s.p99_ms} for s in spec.dataflow.stages if s.p50_ms is not None
    }
    knee = None
    for cap in model_capacities(spec):
        ceiling = cap.ceiling_rps
        if ceiling is None:
            continue
        per_request = getattr(cap.stage, "items_per_request", None) or 1.0
        knee = ceiling / per_request if knee is None else min(knee, ceiling / per_request)
    return {
        "source": "stage P50 budgets on the critical path; knee from per-stage ceilings (no pipeline model)",
        "end_to_end": e2e,
        "stages": stages,
        "knee_rps": round(knee, 3) if knee is not None else None,
    }


def _rows(pred: dict, meas: dict, keys: tuple[str, ...]) -> dict:
    out = {}
    for k in keys:
        p, m = pred.get(k), meas.get(k)
        if p is None or m is None:
            continue
        out[k] = {"predicted": round(float(p), 3), "measured": m, "error_pct": error_pct(float(p), m)}
    return out


def compare(spec: Spec, measured: dict, env: str | None, host: str | None = None) -> dict:
    """The prediction at the offered rate next to what the run measured (`host`: the target's URL,
    asked for the runtime it serves with, to compare with the calibration's)."""
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
        **_calibration(spec, host),
        "end_to_end": _rows(pred.get("end_to_end") or {}, measured.get("end_to_end") or {}, E2E_KEYS),
        "stages": {},
    }
    for sid, m in (measured.get("stages") or {}).items():
        rows = _rows((pred.get("stages") or {}).get(sid) or {}, m, STAGE_KEYS)
        if rows:
            out["stages"][sid] = rows
            out.setdefault("stage_basis", {})[sid] = {
                "predicted": _predicted_from(spec, sid),
                "measured": _measured_by(m),
            }
    if measured.get("stress") is not None:
        knee = measured["stress"].get("knee_rps")
        out["knee_rps"] = {
            "predicted": pred.get("knee_rps"),
            "measured": knee,
            "error_pct": error_pct(pred.get("knee_rps"), knee),
        }
        bracket = measured["stress"].get("knee_bracket_rps")
        if bracket and None not in bracket and pred.get("knee_rps") is not None:
            # the knee lies between the last offered rate that met the budgets and the first that
            # did not: a prediction inside that bracket is as right as the steps can tell
            out["knee_rps"]["bracket"] = bracket
            out["knee_rps"]["within_bracket"] = bracket[0] <= pred["knee_rps"] <= bracket[1]
    return out


FOREIGN = "from a calibration of another machine"


def _predicted_from(spec: Spec, sid: str) -> str:
    """What a stage's predicted number rests on (issue 29 item 6): a measurement or a declaration."""
    st = spec.stage(sid)
    if st is None:
        return "?"
    shared = "simulated per visit on the shared cores (queueing included)"
    if st.model is not None:
        table = st.model.service_time or []
        if table and all(t.measured for t in table):
            return f"calibrated Triton compute per batch, {shared}"
        return f"the declared service_time (not measured here), {shared}"
    if st.cpu_ms is not None:
        return f"cpu_ms {st.cpu_ms:g} ms declared in the spec, its spread from the P50/P99 budgets, {shared}"
    if st.p50_ms is not None:
        return f"its P50 budget {st.p50_ms:g} ms taken as a delay: a budget, not a measurement"
    return "nothing declared"


def _measured_by(m: dict) -> str:
    """What measured a stage's number: the gateway's histogram or Triton's counters."""
    metric = m.get("metric") or "?"
    if metric.startswith("nv_inference"):
        return f"{metric}: Triton's mean per inference request (queue + compute), no percentiles"
    return f"{metric}: the service's histogram (P50/P99 interpolated in its buckets, the mean exact)"


def _calibration(spec: Spec, host: str | None) -> dict:
    """{"calibration": {...}} when the applied environment's calibration was measured on another
    machine than this one (AK230; the service's reported runtime compared too), else {}."""
    applied = getattr(spec, "_applied_env", None)
    if not applied:
        return {}
    from archkit.calibrate.origin import mismatches, service_runtime
    from archkit.machine import fingerprint
    from archkit.reporting import locate

    here = fingerprint(service_runtime(spec, host))
    for m in mismatches(spec, here=here):
        if m.env == applied:
            where = locate(spec, m.spec_path)
            return {
                "calibration": {
                    "foreign": True,
                    "file": m.calibration,
                    "finding": f"{where.file}:{where.line}:{where.col}: AK230 warning {m.message()}",
                }
            }
    return {}


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
        measured = _fmt(knee["measured"])
        if knee.get("bracket"):
            lo, hi = knee["bracket"]
            inside = "predicted inside" if knee.get("within_bracket") else "predicted outside"
            measured += f" (between {_fmt(lo)} and {_fmt(hi)} offered; {inside})"
        rows.append(
            ["stress knee", "req/s", _fmt(knee["predicted"]), measured, _fmt(knee["error_pct"], " %")]
        )
    return rows


def section(cmp: dict | None) -> tuple[str, list[str], list[list[str]], list[str]] | None:
    """The report section: predicted, measured and the error in %, per stage and end to end."""
    if not cmp:
        return None
    if cmp.get("error"):
        return ("Predicted vs measured", ["", ""], [], [cmp["error"]])
    foreign = (cmp.get("calibration") or {}).get("finding")
    return (
        "Predicted vs measured" + (f" ({FOREIGN})" if foreign else ""),
        ["what", "value", "predicted", "measured", "error"],
        _table_rows(cmp),
        [
            f"Prediction at {_fmt(cmp.get('rate_rps'), ' req/s')} from {cmp.get('source')}; error = "
            "(predicted − measured) / measured. A miss beyond ~15 % is a bug in the model or the spec."
        ]
        + ([f"Every predicted value here comes {FOREIGN}: {foreign}"] if foreign else [])
        + [
            f"stage {sid}: predicted from {b['predicted']}; measured by {b['measured']}."
            for sid, b in (cmp.get("stage_basis") or {}).items()
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
    foreign = (cmp.get("calibration") or {}).get("finding")
    out, seen = ([f"note: {foreign}"] if foreign else []), set()
    for w, k, p, m, e in _table_rows(cmp):
        if w == "end to end" and k not in ("p50_ms", "p99_ms"):
            continue
        if w.startswith("stage ") and (w in seen or k == "p99_ms"):
            continue
        seen.add(w)
        out.append(f"predicted {w} {k}: {p} vs measured {m} ({e})" + (f" [{FOREIGN}]" if foreign else ""))
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
