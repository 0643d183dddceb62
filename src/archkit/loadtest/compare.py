"""Predicted against measured: per stage and end to end, the prediction's error in percent.

The prediction is the whole-pipeline model (`archkit.perf.pipeline.predict`) at the rate the
load test offered.
Error is (predicted − measured) / measured: positive when the model promised too much latency
(or too high a knee), negative when it was optimistic. A miss of more than ~15 % is a bug in the
model or the spec (DESIGN: the prediction loop), never noise to hide.
"""

from __future__ import annotations

from pathlib import Path

from archkit import engines
from archkit.perf.fanout import calls_per_visit
from archkit.spec.model import Spec

E2E_KEYS = ("p50_ms", "p95_ms", "p99_ms", "mean_ms")
STAGE_KEYS = ("p50_ms", "p99_ms", "mean_ms")
FANOUT_KEYS = ("items_per_request", "calls_per_visit")  # a model stage's fan-out, predicted and counted


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


def compare(
    spec: Spec, measured: dict, env: str | None, host: str | None = None, base: Path | None = None
) -> dict:
    """The prediction at the offered rate next to what the run measured (`host`: the target's URL,
    asked for the runtime it serves with, to compare with the calibration's; `base`: the spec's
    folder, for an llm workload's trace files)."""
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
        st = spec.stage(sid)
        if st is not None and st.kind.value in ("ingress", "gateway"):
            continue  # its histogram times the whole request (the end-to-end rows), not its own part
        rows = _rows((pred.get("stages") or {}).get(sid) or {}, m, STAGE_KEYS)
        if st is not None and st.model is not None and m.get("items_per_visit") is not None:
            # the fan-out is a prediction too: the model multiplies the stage's per-item times by
            # it, so a spec that over-counts the items (issue 29: 8.1 declared lines a page where
            # the detector finds 6.88) predicts a ceiling too low by as much
            rows["items_per_request"] = {
                "predicted": st.items_per_request,
                "measured": m["items_per_visit"],
                "error_pct": error_pct(st.items_per_request, m["items_per_visit"]),
            }
        if st is not None and st.model is not None and m.get("calls_per_visit") is not None:
            # and the calls they go in: the model's ⌈items / items_per_call⌉, or its fan-out table's
            # mean (issue 29: the gateway sends 4.27 calls a page by width bucket, not 3.88 pairs)
            calls = calls_per_visit(st)
            rows["calls_per_visit"] = {
                "predicted": round(calls, 3),
                "measured": m["calls_per_visit"],
                "error_pct": error_pct(calls, m["calls_per_visit"]),
            }
        if rows:
            out["stages"][sid] = rows
            out.setdefault("stage_basis", {})[sid] = {
                "predicted": _predicted_from(spec, sid),
                "measured": _measured_by(m),
            }
    from archkit.loadtest import compare_llm  # it takes error_pct from here

    try:
        llm = compare_llm.compare_llm(spec, measured, base)
    except Exception as exc:  # as above: the measurement is kept whatever the LLM model does
        llm, out["llm_error"] = {}, f"LLM prediction failed: {type(exc).__name__}: {exc}"
    if llm:
        out["llm"] = llm
    try:
        curve = predicted_curve(spec, measured, pred.get("knee_rps"))
    except Exception as exc:  # the overlay is a picture: it must not lose the comparison
        curve = None
        out["curve_error"] = f"{type(exc).__name__}: {exc}"
    if curve is not None:
        out["curve"] = curve
    if measured.get("stress") is not None:
        knee = measured["stress"].get("knee_rps")
        if measured["stress"].get("predicted_knee_rps") is not None:
            # the streamed llm stage's knee (archkit.perf.llm): the pipeline model's knee is the
            # request path's, which knows nothing of the engine's slots and decode steps
            pred = {**pred, "knee_rps": measured["stress"]["predicted_knee_rps"]}
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


CURVE_POINTS = 8  # rates on the overlay's predicted curve
CURVE_REQUESTS = 5_000  # simulated requests per rate: the curve costs a few seconds, not minutes


def predicted_curve(spec: Spec, measured: dict, ceiling_rps: float | None) -> dict | None:
    """The predicted latency-vs-load curve (`perf.curve.sweep`) the report overlays the measured
    steps on: CURVE_POINTS even rates up to 1.25x the highest rate offered, or 1.1x the closed-form
    ceiling when that is higher, so the knee is on the plot. Deterministic (the sweep's seed)."""
    from archkit.perf.curve import sweep

    offered = [float(p["offered_rps"]) for p in measured.get("phases") or [] if p.get("offered_rps")]
    if not offered:
        return None
    top = 1.25 * max(offered)
    if ceiling_rps is not None and 0 < ceiling_rps < 1e6:
        top = max(top, 1.1 * ceiling_rps)
    rates = [round(top * k / CURVE_POINTS, 3) for k in range(1, CURVE_POINTS + 1)]
    return sweep(spec, rates, requests=CURVE_REQUESTS).as_dict()


def curve_overlay(measured: dict) -> str | None:
    """The SVG of the predicted curve with this run's measured points on it (None without a curve)."""
    from archkit.perf.curve import overlay_svg

    return overlay_svg(measured)


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
    env = spec.applied_environment
    calibrated = (
        env is not None
        and env.calibration
        and any(o.stage == sid and o.cpu_ms is not None for o in env.stages)
    )
    if st.cpu_ms is not None and calibrated and st.cpu_p99_ms is not None:
        return (
            f"cpu_ms {st.cpu_ms:g} ms from the calibration (the stage's median over sequential requests "
            f"after a warm-up), its P99 {st.cpu_p99_ms:g} ms from the calibration's P50 -> P95 spread, {shared}"
        )
    if st.cpu_ms is not None and calibrated:
        return (
            f"cpu_ms {st.cpu_ms:g} ms from the calibration (the stage's mean over sequential requests "
            f"as the median of its distribution), its spread from the P50/P99 budgets, {shared}"
        )
    if st.cpu_ms is not None:
        return f"cpu_ms {st.cpu_ms:g} ms declared in the spec, its spread from the P50/P99 budgets, {shared}"
    if st.p50_ms is not None:
        return f"its P50 budget {st.p50_ms:g} ms taken as a delay: a budget, not a measurement"
    return "nothing declared"


def _measured_by(m: dict) -> str:
    """What measured a stage's number: the gateway's histogram or Triton's counters."""
    metric = m.get("metric") or "?"
    from archkit.loadtest.scrape import ENGINE_PARTS_GLOB  # the engine's counters, named by its adapter

    if metric == ENGINE_PARTS_GLOB or engines.adapter("triton").series(metric) is not None:
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
    if cmp.get("llm"):
        from archkit.loadtest.compare_llm import table_rows

        rows += table_rows(cmp["llm"])
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
        ]
        + [f"llm {sid}: predicted by {c['basis']}." for sid, c in (cmp.get("llm") or {}).items()]
        + ([cmp["llm_error"]] if cmp.get("llm_error") else []),
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
        if w.startswith("stage ") and k not in FANOUT_KEYS and (w in seen or k == "p99_ms"):
            continue
        if w.startswith("llm ") and k in ("itl_p99_ms", "tpot_p50_ms"):
            continue  # the terminal keeps TTFT P50/P99, ITL P50 and the engine's step
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
