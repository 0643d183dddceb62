"""AK203: the queueing model predicts a P99 over budget at the declared batch settings."""

from archkit.analysis.batching import recommend
from archkit.checks.common import capacities, fmt_ms
from archkit.checks.registry import Rule, register


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
queueing + service; the P99 is a conservative bound) and compares it with the tighter of
the stage's P99 budget and the end-to-end P99. `archkit capacity SPEC` prints the table
per batch size and the cheapest configuration that meets the budget.
"""

    def check(self, ctx):
        for cap in capacities(ctx):
            p = cap.declared
            if p is None or cap.budget_ms is None or p.p99_ms <= cap.budget_ms + 1e-9:
                continue
            rec = cap.recommendation
            hint = ""
            if rec is not None:
                hint = ("cheapest that meets it: " + rec.reason) if rec.met else rec.reason
                e2e = ctx.spec.budgets.p99_ms
                if not rec.met and e2e is not None and e2e > cap.budget_ms:
                    other = recommend(cap.table, cap.arrival_rps, e2e, cap.max_batch_size,
                                      cap.stage.model.batching.preferred_batch_sizes
                                      if cap.stage.model.batching else (), cap.instances)
                    if other.met:
                        hint += f"; for the end-to-end {fmt_ms(e2e)}: {other.reason}"
            obj = cap.stage.model.batching or cap.stage.model
            field = "max_queue_delay_us" if cap.stage.model.batching else "instances"
            yield ctx.at(obj, field,
                         f"stage '{cap.stage.id}' predicted P99 {fmt_ms(p.p99_ms)} at batch {p.batch_size} "
                         f"(max_queue_delay_us {p.max_queue_delay_us}, {p.replicas}×{p.instances} instances, "
                         f"{p.arrival_rps:g} req/s) > {fmt_ms(cap.budget_ms)} ({cap.budget_source})",
                         hint=hint, stage=cap.stage.id, predicted_p99_ms=round(p.p99_ms, 1),
                         predicted_p50_ms=round(p.p50_ms, 1), budget_ms=cap.budget_ms,
                         batch_size=p.batch_size, rho=round(p.rho, 3))
