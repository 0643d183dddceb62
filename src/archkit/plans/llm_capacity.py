"""The LLM section of `archkit capacity`: each `kind: llm` stage's analysis as plain data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from archkit.perf.llm.analysis import LlmAnalysis, WorkBudget, analyse_spec, pre_llm_ms
from archkit.perf.llm.sim import Summary
from archkit.spec.model import Spec
from archkit.spec.sourcemap import format_path


def _r(v: float | None, nd: int = 1) -> float | None:
    return None if v is None or math.isnan(v) or math.isinf(v) else round(v, nd)


def _summary(s: Summary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "requests": s.requests,
        "finished": s.finished,
        **{
            f"{k}_ms": {q: _r(v) for q, v in getattr(s, f"{k}_ms").items()}
            for k in ("ttft", "itl", "tpot", "e2e")
        },
        "output_tokens_per_s": _r(s.output_tokens_per_s),
        "requests_per_s": _r(s.requests_per_s, 2),
        "slo_attainment": _r(s.slo_attainment, 4),
        "goodput_rps": _r(s.goodput_rps, 2),
        "preemptions": s.preemptions,
        "max_running": s.max_running,
        "notes": s.notes,
    }


def llm_row(spec: Spec, a: LlmAnalysis) -> dict[str, Any]:
    """One LLM stage: memory, KV, concurrency, step table, predictions vs budgets, goodput, recommendation."""
    rep = a.rep
    pre, path = pre_llm_ms(spec, a.stage)
    s = a.summary
    gpus = a.gpus
    row: dict[str, Any] = {
        "stage": a.stage.id,
        "engine": a.llm.engine.name.value,
        "engine_version": a.llm.engine.version,
        "model": rep.arch.name if rep else a.llm.model.preset,
        "device": a.device.name if a.device else None,
        "tensor_parallel": a.llm.parallelism.tensor,
        "pipeline_parallel": a.llm.parallelism.pipeline,
        "replicas": a.replicas,
        "gpus": gpus,
        "arrival_rps": a.rate_rps,
        "prompt_mean_tokens": _r(a.prompt_mean),
        "output_mean_tokens": _r(a.output_mean),
        "memory_gb_per_gpu": {k: _r(v, 2) for k, v in a.memory().items()},
        "fits": a.fits,
        "kv_bytes_per_token": rep.kv_bytes_per_token if rep else None,
        "kv_blocks": rep.kv_blocks if rep else None,
        "kv_tokens": rep.kv_tokens if rep else None,
        "kv_source": rep.kv_source if rep else None,
        "block_size_tokens": rep.block_size if rep else None,
        "concurrency": a.concurrency,
        "concurrency_binds": a.concurrency_binds,
        "decode_lower_bound_ms": _r(rep.decode_lower_bound_s() * 1000, 2) if rep else None,
        "crossover_batch": _r(rep.crossover_batch) if rep else None,
        "tokens_per_decode_step": _r(rep.tokens_per_step, 3) if rep else None,
        "prefill_mean_prompt_ms": _r(a.prefill_ms),
        "step_table": [{"batch": b, "context": c, "ms": _r(ms, 2)} for b, c, ms in a.step_table],
        "capacity_rps_per_replica": _r(a.capacity_rps, 2),
        "predicted": _summary(s),
        "budgets": [
            {"name": v.name, "budget": v.budget, "predicted": _r(v.predicted, 2), "met": v.met}
            for v in a.verdicts
        ],
        "goodput_rps_per_gpu": _r(s.goodput_rps * a.replicas / gpus, 3)
        if s and s.goodput_rps is not None
        else None,
        "max_rate_90pct_slo_rps": _r(a.max_rate_90_rps * a.replicas, 2)
        if a.max_rate_90_rps is not None
        else None,
        "knee_rps": _r(a.knee_rps * a.replicas, 2) if a.knee_rps is not None else None,
        "pre_llm_p99_ms": _r(pre),
        "pre_llm_stages": path,
        "binding": a.binding,
        "recommendation": (
            {
                "gpu": a.recommendation.gpu,
                "tensor_parallel": a.recommendation.tensor,
                "replicas": a.recommendation.replicas,
                "max_num_seqs": a.recommendation.max_num_seqs,
                "max_num_batched_tokens": a.recommendation.max_num_batched_tokens,
                "gpus": a.recommendation.gpus,
                "predicted": _summary(a.recommendation.summary),
            }
            if a.recommendation
            else None
        ),
        "notes": a.notes,
        "budget_note": a.budget_note,
        # where the spec asks for the work: the stage's workload (`archkit capacity` locates it)
        "budget_path": format_path((*a.stage.spec_path, "llm", "workload")) if a.budget_note else None,
    }
    return row


def llm_rows(
    spec: Spec, file: str, sim_budget: int | None = None, work: WorkBudget | None = None
) -> list[dict[str, Any]]:
    """Every LLM stage's row, their simulations within `work` (else `sim_budget`: `analyse_spec`)."""
    base = Path(file).parent if file and not file.startswith("<") else None
    got = analyse_spec(spec, base=base, search=True, sim_budget=sim_budget, work=work)
    return [llm_row(spec, a) for a in got]
