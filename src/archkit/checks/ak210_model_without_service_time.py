"""AK210: a model stage declares no per-batch service time, so its capacity cannot be checked."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class ModelWithoutServiceTime(Rule):
    """A model stage has no `service_time` table: latency and capacity cannot be predicted."""

    code = "AK210"
    name = "model-without-service-time"
    severity = Severity.WARNING
    source = "seed 000 §2.1 (copy and compute time per batch size decide the trade-off)"
    rationale = """
Without measured (or estimated) service times per batch size — copy_ms, compute_ms,
overhead_ms as seed 000 §2.1 measured them — archkit cannot predict the stage's P99, its
utilisation or its ceiling, and the capacity rules stay silent. Measure batch 1 and the
largest batch at least.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            # an llm stage's step time is the llm section's prefill/decode model, not a batch table
            if st.model is not None and st.llm is None and not st.model.service_time:
                yield ctx.at(st.model, "name", f"model stage '{st.id}' has no service_time table")
