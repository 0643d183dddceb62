"""Verdicts on an llm stage's token budgets (TTFT, ITL, TPOT, end to end, output tokens/s) from a streamed run.

A scenario that names an llm stage (`loadtest.scenarios[].llm_stage`) is judged by that stage's
`llm.budgets`: percentiles from the streaming measures (archkit.loadtest.measures.stream), exact
to 0.1 % like every latency here, judged on their distribution-free 95 % intervals as every other
percentile budget (`archkit.loadtest.judge`: met, missed, or inconclusive with the run length
that would decide it — a TTFT P99 from fewer than 368 requests decides nothing); `slo_attainment` by the
share of requests that met both their TTFT and TPOT objectives, with the goodput it implies. Steady (baseline) runs
only, like the end-to-end percentiles: stress and chaos runs mix several rates or faults.
"""

from __future__ import annotations

from typing import Any

from archkit.loadtest.judge import Verdict, upper_bound
from archkit.spec.model import Spec

# budget field -> (measure, statistic, what it is called); "<=" unless named in AT_LEAST
PERCENTILES: dict[str, tuple[str, str, str]] = {
    "ttft_p50_ms": ("ttft_ms", "p50_ms", "TTFT P50"),
    "ttft_p99_ms": ("ttft_ms", "p99_ms", "TTFT P99"),
    "itl_p50_ms": ("itl_ms", "p50_ms", "ITL P50"),
    "itl_p99_ms": ("itl_ms", "p99_ms", "ITL P99"),
    "tpot_ms": ("tpot_ms", "p99_ms", "TPOT P99 over requests"),
}


def _verdict(
    vid: str,
    stage: str,
    field: str,
    op: str,
    budget: float,
    got: float | None,
    unit: str,
    n: int,
    what: str,
    path: tuple[Any, ...],
) -> Verdict:
    if got is None:
        return Verdict(
            vid,
            f"llm.{stage}",
            field,
            op,
            budget,
            None,
            unit,
            False,
            f"{what}: nothing measured, so the budget of {budget:g} {unit} is not met",
            path,
        )
    ok = got <= budget if op == "<=" else got >= budget
    word = "within" if ok else "over" if op == "<=" else "under"
    return Verdict(vid, f"llm.{stage}", field, op, budget, got, unit, ok,
                   f"{what} {got:g} {unit} {word} the budget of {budget:g} {unit} (n={n})", path)  # fmt: skip


def _judged(
    vid: str,
    stage: str,
    field: str,
    budget: float,
    got: float | None,
    n: int,
    what: str,
    path: tuple[Any, ...],
    ci: dict[str, Any] | None,
    duration_s: float | None,
    stat: str,
) -> Verdict:
    """A percentile budget on its interval where the measurement carries one, else on its value."""
    if got is None or ci is None:
        return _verdict(vid, stage, field, "<=", budget, got, "ms", n, what, path)
    v = upper_bound(vid, f"llm.{stage}", field, budget, got, "ms", path, what, ci, duration_s, stat)
    return v if v is not None else _verdict(vid, stage, field, "<=", budget, got, "ms", n, what, path)


def judge(spec: Spec, measured: dict[str, Any]) -> list[Verdict]:
    """One verdict per declared token budget of each llm stage a scenario streamed to."""
    if measured.get("kind", "baseline") != "baseline" or spec.loadtest is None:
        return []
    stages = spec.by_id("stage")
    by_stage: dict[str, list[str]] = {}
    for sc in spec.loadtest.scenarios:
        if sc.llm_stage is not None and getattr(stages.get(sc.llm_stage), "llm", None) is not None:
            by_stage.setdefault(sc.llm_stage, []).append(sc.id)
    out: list[Verdict] = []
    for stage_id, scenario_ids in sorted(by_stage.items()):
        stage = stages[stage_id]
        b = stage.llm.budgets
        bpath = tuple(stage.spec_path) + ("llm", "budgets")
        if len(scenario_ids) == 1:
            stats = (measured.get("scenarios") or {}).get(scenario_ids[0]) or {}
        else:  # several scenarios stream to it: all streamed requests together
            stats = measured.get("end_to_end") or {}
        m = stats.get("measures") or {}
        for field, (measure, stat, what) in PERCENTILES.items():
            budget = getattr(b, field)
            if budget is not None:
                got = (m.get(measure) or {}).get(stat)
                n = (m.get(measure) or {}).get("count") or 0
                ci = ((m.get(measure) or {}).get("ci") or {}).get(stat)
                out.append(_judged(f"llm.{stage_id}.{field}", stage_id, field, budget, got, n, what,
                                   bpath + (field,), ci, measured.get("duration_s"), stat))  # fmt: skip
        for field, stat in (("e2e_p50_ms", "p50_ms"), ("e2e_p99_ms", "p99_ms")):
            budget = getattr(b, field)
            if budget is not None:
                what = f"end-to-end {stat[:3].upper()} of the streamed requests"
                out.append(_judged(f"llm.{stage_id}.{field}", stage_id, field, budget, stats.get(stat),
                                   stats.get("requests") or 0, what, bpath + (field,),
                                   (stats.get("ci") or {}).get(stat), measured.get("duration_s"), stat))  # fmt: skip
        if b.output_tokens_per_s is not None:
            tokens = (m.get("chunks_per_token") or {}).get("output_tokens")
            seconds = measured.get("duration_s") or 0
            got = round(tokens / seconds, 3) if tokens and seconds else None
            out.append(_verdict(f"llm.{stage_id}.output_tokens_per_s", stage_id, "output_tokens_per_s", ">=",
                                b.output_tokens_per_s, got, "tokens/s", stats.get("requests") or 0,
                                "output tokens/s sustained", bpath + ("output_tokens_per_s",)))  # fmt: skip
        if b.slo_attainment is not None:
            out.append(_attainment(stage_id, b.slo_attainment, m.get("slo_attainment") or {},
                                   measured.get("duration_s") or 0, bpath + ("slo_attainment",)))  # fmt: skip
    return out


def _attainment(
    stage: str, budget: float, got: dict[str, Any], seconds: float, path: tuple[Any, ...]
) -> Verdict:
    """The share of requests meeting both objectives, with the goodput (met requests/s) it implies."""
    n, met, share = got.get("requests") or 0, got.get("met") or 0, got.get("attainment")
    vid, what = f"llm.{stage}.slo_attainment", "SLO attainment (TTFT and TPOT objectives both met)"
    if share is None:
        return _verdict(vid, stage, "slo_attainment", ">=", budget, None, "", 0, what, path)
    ok = share >= budget
    goodput = f"goodput {met / seconds:.3g} req/s, " if seconds else ""
    return Verdict(vid, f"llm.{stage}", "slo_attainment", ">=", budget, share, "", ok,
                   f"{what} {share:g} {'meets' if ok else 'under'} the objective of {budget:g}: {met} of {n} requests "
                   f"({goodput}TTFT met by {got.get('ttft_met', 0)}, TPOT by {got.get('tpot_met', 0)}; n={n})",
                   path)  # fmt: skip
