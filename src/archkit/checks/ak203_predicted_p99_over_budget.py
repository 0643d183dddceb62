"""AK203: the queueing model predicts a P99 over budget at the declared batch settings."""

import math
from collections.abc import Iterator

from archkit.checks.common import capacities, fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.model import Node


@register
class PredictedP99OverBudget(Rule):
    """A model stage's predicted P99 at its declared batching, instances and rate exceeds its budget."""

    code = "AK203"
    name = "predicted-p99-over-budget"
    source = "seed 000 §2.1 (batch 8: 28 ms per image on average, but P99 112 ms > 50 ms)"
    rationale = """
Larger batches raise throughput per GPU but every request waits for its batch to fill, for
a free instance, and for the whole batch to be copied and computed. archkit predicts the
stage's latency from the declared per-batch service times (interpolated between measured
sizes), the design rate, max_queue_delay_us, instances and replicas (fill time + M/D/c
queueing at the service's routing + service; the P99 adds component P99s, conservative
when batches form) and compares it with the tighter of the stage's P99 budget and the
end-to-end P99 less what the other stages on its path take at their P99s. When the
estimate misses the budget, a
discrete-event simulation of the batcher (same assumptions, no approximation) is the
judge: an error if the simulated P99 misses too (or the stage is overloaded), a warning
("tight") if only the estimate does. `archkit capacity SPEC` prints both per batch size and the
cheapest configuration that meets the budget.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for cap in capacities(ctx):
            p, model = cap.declared, cap.stage.model
            if p is None or model is None or cap.budget_ms is None or p.p99_ms <= cap.budget_ms + 1e-9:
                continue
            rec = cap.recommendation
            hint = ""
            if rec is not None:
                hint = ("cheapest that meets it: " + rec.reason) if rec.met else rec.reason
                note = cap.pool_note(rec)
                hint += f"; {note}" if note else ""
                # the stage's own budget binds: what would meet its share of the end-to-end budget
                e2e, src = cap.end_to_end
                if not rec.met and e2e is not None and e2e > cap.budget_ms:
                    other = cap.recommend_for(e2e)
                    if other is not None and other.met:
                        note = cap.pool_note(other)
                        hint += f"; for {fmt_ms(e2e)} ({src}): {other.reason}" + (f"; {note}" if note else "")
            obj: Node = model.batching or model
            field = "max_queue_delay_us" if model.batching else "instances"
            sim = cap.simulated
            sim_ok = sim is not None and sim.stable and sim.p99_ms <= cap.budget_ms
            sim_txt = (
                f"simulated {fmt_ms(sim.p99_ms)}"
                if sim is not None and sim.stable
                else "simulated: overloaded"
            )
            verdict = (
                f"; only the analytic estimate misses it ({sim_txt} fits): tight"
                if sim_ok
                else f"; {sim_txt}"
            )
            yield ctx.at(
                obj,
                field,
                f"stage '{cap.stage.id}' predicted P99 {fmt_ms(p.p99_ms)} at batch {p.batch_size} "
                f"(max_queue_delay_us {p.max_queue_delay_us}, {p.replicas}×{p.instances} instances, "
                f"{p.arrival_rps:g} req/s) > {fmt_ms(cap.budget_ms)} ({cap.budget_source}){verdict}",
                severity=Severity.WARNING if sim_ok else Severity.ERROR,
                hint=hint,
                stage=cap.stage.id,
                predicted_p99_ms=_finite(p.p99_ms),
                predicted_p50_ms=_finite(p.p50_ms),
                budget_ms=cap.budget_ms,
                batch_size=p.batch_size,
                rho=round(p.rho, 3),
                simulated_p99_ms=round(sim.p99_ms, 1) if sim is not None and sim.stable else None,
            )


def _finite(v: float) -> float | None:
    """JSON has no infinity: an overloaded stage's latency is reported as null."""
    return round(v, 1) if math.isfinite(v) else None
