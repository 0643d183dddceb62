"""Predicted against measured for a streamed llm stage: its token latencies, and the engine's own step.

The prediction is `archkit capacity`'s for the stage (`archkit.perf.llm`: its engine, model,
efficiency and workload, the environment's calibration applied) simulated at the rate the run
offered the stage's scenario (SIM_REQUESTS requests, seed 0, the spec's replicas), so every
streamed baseline shows how far the model was off, as `compare` does for the pipeline's stages.

The engine row separates the machine from the model. Where the server returns its own `timings`
(llama.cpp), the model's one-sequence decode step at the workload's mean context is compared with
the server's decode time per token (P50 over requests). When the engine's own step is off by as
much as the ITL, the engine ran at another speed than it was calibrated at (a
shared machine's minute: docs/benchmarks.md, LLM fidelity), which recalibrating fixes, not the
model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from archkit.loadtest.compare import error_pct
from archkit.spec.model import Spec

SIM_REQUESTS = 8_000  # as `archkit capacity` predicts an llm stage (perf.llm.analysis.SIM_REQUESTS)
# token figure -> (the streaming measure, its statistic); the prediction's key is the same name
TOKEN_ROWS: dict[str, tuple[str, str]] = {
    "ttft_p50_ms": ("ttft_ms", "p50_ms"),
    "ttft_p99_ms": ("ttft_ms", "p99_ms"),
    "itl_p50_ms": ("itl_ms", "p50_ms"),
    "itl_p99_ms": ("itl_ms", "p99_ms"),
    "tpot_p50_ms": ("tpot_ms", "p50_ms"),
}


def _row(p: float | None, m: float | None, n: int | None = None) -> dict[str, Any] | None:
    if p is None or m is None:
        return None
    row: dict[str, Any] = {
        "predicted": round(float(p), 3),
        "measured": m,
        "error_pct": error_pct(float(p), m),
    }
    if n is not None:
        row["n"] = n
    return row


def _streamed(spec: Spec, measured: dict) -> dict[str, tuple[float, dict]]:
    """{stage id: (offered req/s, its streaming measures)} for each llm stage a scenario streamed to."""
    if spec.loadtest is None or not measured.get("offered_rps"):
        return {}
    scenarios = spec.loadtest.scenarios
    total = sum(sc.weight for sc in scenarios) or 1.0
    out: dict[str, tuple[float, dict]] = {}
    for sc in scenarios:
        st = spec.stage(sc.llm_stage) if sc.llm_stage else None
        if st is None or st.llm is None:
            continue
        m = ((measured.get("scenarios") or {}).get(sc.id) or {}).get("measures") or {}
        rate = float(measured["offered_rps"]) * sc.weight / total
        if st.id in out:  # several scenarios stream to it: their rates add, all requests together
            m = (measured.get("end_to_end") or {}).get("measures") or {}
            rate += out[st.id][0]
        out[st.id] = (rate, m)
    return out


def compare_llm(spec: Spec, measured: dict, base: Path | None = None) -> dict:
    """{stage id: {"rate_rps", "tokens": {figure: row}, "engine": {figure: row}, "basis"}} for a
    baseline run that streamed to llm stages; {} otherwise. A row is {"predicted", "measured",
    "error_pct"[, "n"]}."""
    if measured.get("kind", "baseline") != "baseline":
        return {}
    from archkit.perf.llm import analysis, sim

    out: dict = {}
    for sid, (rate, m) in sorted(_streamed(spec, measured).items()):
        stage = spec.stage(sid)
        assert stage is not None and stage.llm is not None
        a = analysis.analyse(spec, stage, base=base, search=False, predict=False)
        if a.rep is None or not a.fits or rate <= 0:
            continue  # nothing to predict with (no device, or a request that does not fit)
        per = rate / a.replicas
        req = sim.workload(stage.llm.workload, per, SIM_REQUESTS, seed=0, base=base)
        s = sim.summarise(sim.simulate_replicas(a.rep, req, 1, seed=0))
        pred = {
            "ttft_p50_ms": s.ttft_ms["p50"],
            "ttft_p99_ms": s.ttft_ms["p99"],
            "itl_p50_ms": s.itl_ms["p50"],
            "itl_p99_ms": s.itl_ms["p99"],
            "tpot_p50_ms": s.tpot_ms["p50"],
        }
        tokens = {}
        for key, (measure, stat) in TOKEN_ROWS.items():
            got = m.get(measure) or {}
            row = _row(pred[key], got.get(stat), got.get("count"))
            if row is not None:
                tokens[key] = row
        context = int(a.prompt_mean + a.output_mean / 2)
        engine = {}
        step = _row(
            a.rep.decode_step_s(1, context) * 1000, (m.get("server_decode_per_token_ms") or {}).get("p50_ms")
        )
        if step is not None:
            engine["decode_step_ms"] = step
        if tokens or engine:
            out[sid] = {
                "rate_rps": round(rate, 6),
                "tokens": tokens,
                "engine": engine,
                "basis": f"archkit.perf.llm at {rate:.4g} req/s ({SIM_REQUESTS:,} simulated requests, seed 0); "
                f"the engine's one-sequence decode step at context {context} against llama.cpp's own "
                "decode time per token (`timings`), P50",
            }
    return out


def table_rows(llm: dict) -> list[list[str]]:
    """[what, value, predicted, measured, error] per row, for the report and the terminal."""
    rows = []
    for sid, c in llm.items():
        for part, label in (("tokens", f"llm {sid}"), ("engine", f"llm {sid} engine")):
            for key, r in c.get(part, {}).items():
                n = f" (n={r['n']})" if r.get("n") is not None else ""
                err = "—" if r["error_pct"] is None else f"{r['error_pct']:+g} %"
                rows.append([label, key, f"{r['predicted']:.4g}", f"{r['measured']:.4g}{n}", err])
    return rows
