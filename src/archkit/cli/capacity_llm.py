"""The LLM section of `archkit capacity`'s text output (one block per `kind: llm` stage)."""

from __future__ import annotations

from typing import Any


def _f(v: Any, unit: str = "") -> str:
    return "—" if v is None else f"{v:g}{unit}"


def _pcts(d: dict[str, Any]) -> str:
    return f"P50 {_f(d['p50'])} / P95 {_f(d['p95'])} / P99 {_f(d['p99'])} ms"


def llm_text(rows: list[dict[str, Any]]) -> list[str]:
    """Memory, KV, concurrency, the step-time table, predictions vs budgets, goodput, binding, recommendation."""
    out: list[str] = []
    for r in rows:
        out.append(
            f"LLM stage {r['stage']} ({r['engine']}{' ' + r['engine_version'] if r['engine_version'] else ''}, "
            f"{r['model']} on {r['device'] or 'an unknown accelerator'}, TP{r['tensor_parallel']} x PP"
            f"{r['pipeline_parallel']}, {r['replicas']} replica(s) = {r['gpus']} GPU(s)): λ {_f(r['arrival_rps'])} "
            f"req/s, prompt {_f(r['prompt_mean_tokens'])} / output {_f(r['output_mean_tokens'])} tokens (means)"
        )
        m = r["memory_gb_per_gpu"]
        if m:
            out.append(
                f"  memory per GPU: {_f(m['device_gb'])} GB x utilisation = {_f(m['usable_gb'])} GB: weights "
                f"{_f(m['weights_gb'])} GB, activation reserve {_f(m['reserve_gb'])} GB, KV cache {_f(m['kv_gb'])} GB"
            )
        if not r["fits"]:
            out += ["  the model does not fit (AK701)", ""]
            continue
        out.append(
            f"  KV: {r['kv_bytes_per_token']:,.0f} B/token, {r['kv_blocks']:,} blocks of {r['block_size_tokens']} = "
            f"{r['kv_tokens']:,} tokens"
            + (
                " (the engine's: llm.engine.kv_capacity_tokens or a calibration)"
                if r.get("kv_source") == "engine"
                else ""
            )
            + f"; concurrency {r['concurrency']} sequences (bound by {r['concurrency_binds']})"
        )
        out.append(
            f"  decode floor {_f(r['decode_lower_bound_ms'])} ms (weights / bandwidth); compute-bound beyond batch "
            f"{_f(r['crossover_batch'])}; prefill of the mean prompt {_f(r['prefill_mean_prompt_ms'])} ms; "
            f"{_f(r['tokens_per_decode_step'])} token(s) per decode step; capacity "
            f"{_f(r['capacity_rps_per_replica'])} req/s per replica"
        )
        ctxs = sorted({row["context"] for row in r["step_table"]})
        out.append("  decode step ms  " + "".join(f"{'ctx ' + str(c):>11}" for c in ctxs))
        for b in sorted({row["batch"] for row in r["step_table"]}):
            cells = {row["context"]: row["ms"] for row in r["step_table"] if row["batch"] == b}
            out.append(f"  batch {b:>8}  " + "".join(f"{_f(cells.get(c)):>11}" for c in ctxs))
        p = r["predicted"]
        if p:
            out.append(
                f"  predicted at {_f(r['arrival_rps'])} req/s ({p['requests']:,} simulated requests per replica):"
            )
            out.append(f"    TTFT {_pcts(p['ttft_ms'])}; ITL {_pcts(p['itl_ms'])}")
            out.append(f"    TPOT {_pcts(p['tpot_ms'])}; e2e {_pcts(p['e2e_ms'])}")
            out.append(
                f"    output {_f(p['output_tokens_per_s'])} tokens/s per replica; SLO attainment "
                f"{_f(p['slo_attainment'])}; goodput {_f(r['goodput_rps_per_gpu'])} req/s per GPU; "
                f"{p['preemptions']} preemptions; at most {p['max_running']} running"
            )
        for b in r["budgets"]:
            out.append(
                f"    budget {b['name']} {_f(b['budget'])}: predicted {_f(b['predicted'])} "
                f"{'meets' if b['met'] else 'OVER BUDGET'}"
            )
        out.append(
            f"  highest rate with >= 90 % meeting the SLOs {_f(r['max_rate_90pct_slo_rps'], ' req/s')}; knee (TTFT P99 "
            f"doubles) {_f(r['knee_rps'], ' req/s')}; stages before it {' -> '.join(r['pre_llm_stages']) or 'none'}: "
            f"{_f(r['pre_llm_p99_ms'])} ms P99"
        )
        out.append(f"  binding constraint: {r['binding']}")
        rec = r["recommendation"]
        if rec:
            out.append(
                f"  recommendation: {rec['replicas']} x {rec['gpu']} TP{rec['tensor_parallel']}, max_num_seqs "
                f"{rec['max_num_seqs']}, max_num_batched_tokens {rec['max_num_batched_tokens']} = {rec['gpus']} GPU(s): "
                f"TTFT P99 {_f(rec['predicted']['ttft_ms']['p99'])} ms, ITL P99 {_f(rec['predicted']['itl_ms']['p99'])} ms"
            )
        out += [f"  note: {n}" for n in r["notes"]]
        if r.get("budget_note"):
            out.append(f"  budget: {r['budget_note']}")
        out.append("")
    if rows:
        out.append(
            "LLM model: roofline iteration times (FLOPs / (peak x MFU), bytes / (bandwidth x efficiency), overhead, "
            "TP all-reduce) in a vLLM-style continuous-batching simulation (seed 0); see docs/llm.md."
        )
        out.append("")
    return out
