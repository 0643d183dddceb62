"""The capacity report of `archkit capacity`: per model stage the queueing and batching results as data.

Also the plain-language arithmetic behind each prediction (`why`): the figures the capacity
command and the review page show, computed once from the analysis (`archkit.perf`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from archkit.diagnostics import Diagnostic
from archkit.perf.batching import BatchPrediction
from archkit.perf.capacity import model_capacities, worker_capacities
from archkit.perf.latency import dataflow_paths, stage_p99
from archkit.perf.service_table import ServiceTable
from archkit.perf.simulate import simulate
from archkit.spec.model import Spec


@dataclass
class CapacityReport:
    """`archkit capacity`: per model stage, the queueing/batching analysis as plain data."""

    file: str
    name: str
    arrival_rps: float | None
    p99_budget_ms: float | None
    stages: list[dict[str, Any]] = field(default_factory=list)
    paths: list[dict[str, Any]] = field(default_factory=list)
    workers: list[dict[str, Any]] = field(default_factory=list)  # non-model stages with `concurrency` (M/M/c)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    pipeline: dict[str, Any] | None = (
        None  # PipelinePrediction.as_dict(): ceiling, bottleneck, resources, e2e
    )
    llm: list[dict[str, Any]] = field(default_factory=list)  # plans.llm_capacity.llm_row per LLM stage
    curve: dict[str, Any] | None = None  # LoadCurve.as_dict() when rates were asked for (`--rate`)
    jobs: list[dict[str, Any]] = field(default_factory=list)  # batch GPU jobs' GPU time (`perf.jobs`)
    pools: list[dict[str, Any]] = field(default_factory=list)  # connection pools (`perf.pools`)
    caches: list[dict[str, Any]] = field(default_factory=list)  # caches' hit/miss mix (`perf.cache`)

    @property
    def knee(self) -> dict[str, Any]:
        """The predicted knee, for a load test's knee search to compare with: the closed-form
        ceiling, the simulation's own knee and, with a sweep, the swept rate where it bends."""
        p = self.pipeline or {}
        c = self.curve or {}
        return {
            "ceiling_rps": p.get("knee_rps"),
            "bottleneck": p.get("bottleneck"),
            "simulated_rps": p.get("simulated_knee_rps"),
            "curve_rps": c.get("knee_rps"),
            "curve_reason": c.get("knee_reason"),
        }

    @property
    def missed(self) -> bool:
        """True when a model stage's predicted P99 misses its budget, a worker pool is overloaded, or
        an LLM stage misses a token budget (its simulated user TTFT P99 included)."""
        return (
            any(s["declared"] and not s["declared"]["meets"] for s in self.stages)
            or any(w["rho"] >= 1 for w in self.workers)
            or any(not b["met"] for row in self.llm for b in row["budgets"])
            or any(u["met"] is False for u in (self.pipeline or {}).get("user_ttft", []))
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "name": self.name,
            "arrival_rps": self.arrival_rps,
            "p99_budget_ms": self.p99_budget_ms,
            "stages": self.stages,
            "paths": self.paths,
            "workers": self.workers,
            "pipeline": self.pipeline,
            "knee": self.knee,
            "curve": self.curve,
            "llm": self.llm,
            "jobs": self.jobs,
            "pools": self.pools,
            "caches": self.caches,
        }


def num(v: float | None) -> float | None:
    """A figure for the report: rounded to 0.1, None for unknown or unbounded."""
    return None if v is None or (isinstance(v, float) and math.isinf(v)) else round(v, 1)


def capacity_report(
    spec: Spec,
    file: str = "<spec>",
    rates: list[float] | None = None,
    requests: int | None = None,
    sim_budget: int | None = None,
) -> CapacityReport:
    """Every model stage of a (prepared) spec: λ, ρ, P50/P99 per batch size, the recommendation, why;
    with `rates`, the predicted curve over them (`perf.curve.sweep`). `sim_budget` (simulated
    events, default `perf.pipeline.SIM_BUDGET`) bounds the pipeline prediction, the LLM stages'
    simulations (`WorkBudget`) and the knee search together, in that order, and the sweep's rates
    together on their own."""

    def sim(table: ServiceTable, p: BatchPrediction) -> dict[str, Any]:
        # the queue the prediction assumed: one replica at its share, or the pooled instances
        if p.routing == "least-request":
            lam, servers = p.arrival_rps, p.replicas * p.instances
        else:
            lam, servers = p.arrival_rps / p.replicas, p.instances
        r = simulate(table, lam, p.batch_size, p.max_queue_delay_us, servers)
        return {
            "sim_p50_ms": num(r.p50_ms) if r.stable else None,
            "sim_p99_ms": num(r.p99_ms) if r.stable else None,
            "sim_mean_batch": round(r.mean_batch, 2),
        }

    # numpy and the compiled simulation load only here, not with every `import archkit.api`
    from archkit.perf.llm.analysis import WORK_PER_EVENT, WorkBudget
    from archkit.perf.pipeline import DEFAULT_REQUESTS, SIM_BUDGET, predict, with_knee
    from archkit.plans.llm_capacity import llm_rows

    report = CapacityReport(file, spec.metadata.name, spec.budgets.throughput_rps, spec.budgets.p99_ms)
    # one budget for the run (issue 28: the pipeline's and the LLM analysis's were one each, so a
    # spec that spent both took ~1.5 times the CPU the budget stands for): the prediction at the
    # design rate first, then the LLM analysis with what it left, then the knee search with the rest
    events = sim_budget or SIM_BUDGET
    pred = predict(spec, budget=events)
    work = WorkBudget(events, before=pred.sim_work * WORK_PER_EVENT)
    report.llm = llm_rows(spec, file, work=work)
    llm_events = -(-(work.spent - work.before) // WORK_PER_EVENT)
    report.pipeline = with_knee(pred, spec, elsewhere=llm_events).as_dict()
    report.pipeline["llm_sim_work"] = llm_events
    if rates:
        from archkit.perf.curve import sweep

        # its rates share one budget, as many events as the prediction's (issue 28)
        budget = sim_budget or SIM_BUDGET
        report.curve = sweep(spec, rates, requests=requests or DEFAULT_REQUESTS, budget=budget).as_dict()
    report.jobs = job_rows(spec)
    report.pools = pool_rows(spec)
    paths = dataflow_paths(spec)
    report.caches = cache_rows(spec, paths)
    for path in paths:
        report.paths.append(
            {
                "stages": path.stages,
                "p50_sum_ms": num(path.p50_sum),
                "p99_sum_ms": num(path.p99_sum),
                "p99_independent_ms": num(path.p99_rss),
                "dominant": path.dominant,
                "dominant_p99_ms": num(path.dominant_p99),
            }
        )
    for w in worker_capacities(spec):
        report.workers.append(
            {
                "stage": w.stage.id,
                "arrival_rps": w.arrival_rps,
                "servers": w.servers,
                "service_ms": w.service_ms,
                "rho": round(w.rho, 3),
                "wait_mean_ms": num(w.wait_mean_ms),
                "wait_p99_ms": num(w.wait_p99_ms),
            }
        )
    for cap in model_capacities(spec, paths):
        st, m = cap.stage, cap.stage.model
        if m is None:  # model_capacities yields model stages only
            continue
        row: dict[str, Any] = {
            "stage": st.id,
            "model": m.name,
            "device": m.device.value,
            "arrival_rps": cap.arrival_rps,
            "replicas": cap.replicas,
            "instances": cap.instances,
            "gpus_per_replica": cap.gpus_per_replica,
            "budget_ms": cap.budget_ms,
            "budget_source": cap.budget_source,
            "batch_size": cap.batch_size,
            "max_batch_size": cap.max_batch_size,
            "max_queue_delay_us": cap.max_queue_delay_us,
            "ceiling_rps": num(cap.ceiling_rps),
            "routing": cap.routing,
            "declared": None,
            "per_batch": [],
            "recommendations": [],
            "why": [],
        }
        if cap.table is None:
            row["why"].append("no service_time table: nothing to predict (AK210)")
        table = cap.table
        if cap.declared is not None and table is not None:  # a declared prediction needs the table
            d = cap.declared
            row["declared"] = {
                **_pred(d),
                **sim(table, d),
                "meets": cap.budget_ms is None or d.p99_ms <= cap.budget_ms,
            }
            for bp in cap.per_batch:
                row["per_batch"].append(
                    {
                        **_pred(bp),
                        **sim(table, bp),
                        "per_item_ms": num(table.ms(bp.batch_size) / bp.batch_size),
                        "batch_ms": num(table.ms(bp.batch_size)),
                        "meets": cap.budget_ms is not None and bp.p99_ms <= cap.budget_ms,
                    }
                )
            row["why"] = _why(cap, d)
            budgets = []
            if cap.budget_ms is not None:
                budgets.append((cap.budget_ms, cap.budget_source))
            e2e, e2e_src = cap.end_to_end
            if e2e is not None and e2e != cap.budget_ms:
                budgets.append((e2e, e2e_src))
            for b_ms, src in budgets:
                rec = cap.recommendation if b_ms == cap.budget_ms else cap.recommend_for(b_ms)
                if rec is None:
                    continue
                pr = rec.prediction if rec.met else None
                note = cap.pool_note(rec)
                row["recommendations"].append(
                    {
                        "budget_ms": b_ms,
                        "budget_source": src,
                        "met": rec.met,
                        "reason": rec.reason + (f"; {note}" if note else ""),
                        "routing": cap.routing,
                        "pool_must_grow": bool(note),
                        "batch_size": pr.batch_size if pr else None,
                        "max_queue_delay_us": pr.max_queue_delay_us if pr else None,
                        "replicas": pr.replicas if pr else None,
                        "gpus": (pr.replicas * cap.gpus_per_replica) if pr else None,
                        "p50_ms": num(pr.p50_ms) if pr else None,
                        "p99_ms": num(pr.p99_ms) if pr else None,
                        **(
                            sim(table, pr)
                            if pr
                            else {"sim_p50_ms": None, "sim_p99_ms": None, "sim_mean_batch": None}
                        ),
                    }
                )
        report.stages.append(row)
    return report


def _pred(p: Any) -> dict[str, Any]:
    return {
        "batch_size": p.batch_size,
        "max_queue_delay_us": p.max_queue_delay_us,
        "mean_batch": round(p.mean_batch, 2),
        "p99_batch": p.p99_batch,
        "service_ms": num(p.service_ms),
        "rho": round(p.rho, 3),
        "fill_mean_ms": num(p.fill_mean_ms),
        "fill_p99_ms": num(p.fill_p99_ms),
        "wait_mean_ms": num(p.wait_mean_ms),
        "wait_p99_ms": num(p.wait_p99_ms),
        "p50_ms": num(p.p50_ms),
        "mean_ms": num(p.mean_ms),
        "p99_ms": num(p.p99_ms),
        "ceiling_rps": num(p.ceiling_rps),
        "extrapolated": p.extrapolated,
    }


def _why(cap: Any, d: Any) -> list[str]:
    """Plain-language arithmetic behind the declared configuration's prediction."""
    lam_r = (cap.arrival_rps or 0) / cap.replicas
    out = []
    if cap.declared_instances:
        unit = "GPU" if cap.stage.model.device.value == "gpu" else "core"
        out.append(
            f"the {cap.declared_instances} instances of a replica share {cap.instances} {unit}(s): they serve "
            f"{cap.instances} batch(es) at a time (their time is shared, not added)"
        )
    b = cap.batch_size
    t1, tb = cap.table.ms(1), cap.table.ms(b)
    if b > 1:
        fill_ms = 1000 * (b - 1) / lam_r if lam_r > 0 else float("inf")
        gain = f"{t1 * b / tb:.1f}×" if tb > 0 else "unbounded"
        out.append(
            f"a batch of {b} costs {tb:g} ms ({tb / b:.1f} ms per item) against {t1:g} ms for one item: "
            f"{gain} the throughput per instance"
        )
        out.append(
            f"each replica sees {lam_r:g} req/s, so the {b - 1} requests after the first take "
            f"{fill_ms:.0f} ms on average to arrive; max_queue_delay_us caps the wait at {cap.max_queue_delay_us / 1000:g} ms, so batches "
            f"leave at ~{d.mean_batch:.1f} items (99th percentile {d.p99_batch})"
        )
    if cap.routing == "least-request" or cap.replicas == 1:
        queue = f"batches queue for {cap.servers} instance(s) as M/D/{cap.servers}"
    else:
        queue = (
            f"routing {cap.routing}: each replica's batches queue for its {cap.instances} instance(s) "
            f"as M/D/{cap.instances}"
        )
    out.append(
        f"{queue}: ρ = {d.rho:.2f}, mean wait {d.wait_mean_ms:.1f} ms, P99 wait {d.wait_p99_ms:.1f} ms"
    )
    out.append(
        f"analytic P99 = fill {d.fill_p99_ms:.1f} ms + wait {d.wait_p99_ms:.1f} ms + service of a "
        f"{d.p99_batch}-batch {cap.table.ms(d.p99_batch):.1f} ms = {d.p99_ms:.1f} ms"
        + (f" vs budget {cap.budget_ms:g} ms ({cap.budget_source})" if cap.budget_ms is not None else "")
    )
    return out


def job_rows(spec: Spec) -> list[dict[str, Any]]:
    """Each batch GPU job's GPUs taken and the online stages' utilisation with and without it (seed
    004 §4.4; `archkit.perf.jobs`), at the peak rate when declared, as AK233 judges it."""
    from archkit.perf.jobs import job_loads

    b = spec.budgets
    rate = max(x for x in (b.throughput_rps, b.peak_throughput_rps, 0.0) if x is not None)
    rows = []
    for jl in job_loads(spec):
        rows.append(
            {
                "job": jl.job,
                "service": jl.service,
                "resource": jl.resource,
                "units": jl.units,
                "max_concurrency": jl.max_concurrency,
                "duty_cycle": jl.duty_cycle,
                "gpus_taken": round(jl.taken, 4),
                "online_stages": list(jl.stages),
                "rate_rps": rate or None,
                "online_utilisation": num3(jl.utilisation(rate, with_job=False)) if rate else None,
                "online_utilisation_with_job": num3(jl.utilisation(rate)) if rate else None,
                "online_ceiling_rps": num(jl.ceiling_rps()),
                "tasks_per_hour": num(jl.tasks_per_hour),
            }
        )
    return rows


def pool_rows(spec: Spec) -> list[dict[str, Any]]:
    """Each connection pool's load per client replica and the request rate it admits (seed 004 §1;
    `archkit.perf.pools`), at the peak rate when declared, as AK234 judges it."""
    from archkit.perf.pools import pool_loads

    return [
        {
            "pool": pl.pool,
            "client": pl.client,
            "target": pl.target,
            "size": pl.size,
            "replicas": pl.replicas,
            "hold_ms": pl.hold_ms,
            "hold_declared": pl.hold_declared,
            "rate_rps": pl.rate_rps or None,
            "calls_per_s_per_replica": round(pl.per_replica_cps, 4),
            "in_use": round(pl.offered, 4),
            "wait_probability": round(pl.wait_probability, 4),
            "ceiling_rps": num(pl.ceiling_rps),
        }
        for pl in pool_loads(spec)
    ]


def cache_rows(spec: Spec, paths: list[Any]) -> list[dict[str, Any]]:
    """Each cache's hit and miss latency over the stages a hit skips, their mix at its hit ratio, and
    the critical path's P99 sum with the mix in place of the miss (seed 004 §3.3; `perf.cache`)."""
    from archkit.perf.cache import cache_mixes, mixed_quantile

    rows = []
    for m in cache_mixes(spec):
        mixed = m.mixed_p99_ms
        row: dict[str, Any] = {
            "stage": m.stage,
            "skips": list(m.skips),
            "hit_ratio": m.hit_ratio,
            "hit_ms": m.hit_ms,
            "miss_p50_ms": num(m.miss_p50_ms),
            "miss_p99_ms": num(m.miss_p99_ms),
            "mixed_p99_ms": num(mixed),
            "mean_ms": num(m.mean_ms),
            "path": None,
        }
        # the heaviest path through what a hit skips: its P99 sum with the mix for the cached segment
        on = [p for p in paths if set(m.skips) <= set(p.stages)]
        if mixed is not None and m.hit_ratio is not None and on:
            p = max(on, key=lambda x: x.p99_sum)
            # the segment on the path (the skipped stages, and the lookup when the path runs through
            # it rather than beside it) leaves the path; the mix of a hit and that segment joins it
            seg = [sid for sid in (m.stage, *m.skips) if sid in p.stages]
            seg_p50 = sum((st.p50_ms or 0.0) for sid in seg if (st := spec.stage(sid)) is not None)
            seg_p99 = sum(stage_p99(st) for sid in seg if (st := spec.stage(sid)) is not None)
            row["path"] = {
                "stages": p.stages,
                "p99_sum_ms": num(p.p99_sum),
                "p99_sum_mixed_ms": num(
                    p.p99_sum - seg_p99 + mixed_quantile(m.hit_ratio, m.hit_ms, seg_p50, seg_p99)
                ),
            }
        rows.append(row)
    return rows


def num3(v: float) -> float | None:
    """A share for the report: 3 places, None when unbounded."""
    return None if math.isinf(v) else round(v, 3)
