"""AK211: a batched model has no bounded queue, so overload turns into unbounded latency."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class UnboundedBatchQueue(Rule):
    """Dynamic batching without `max_queue_size`: under overload the queue and latency grow without bound."""

    code = "AK211"
    name = "unbounded-batch-queue"
    severity = Severity.WARNING
    source = "seed 000 §2.1 (Nginx buffer limits to 25 QPS so the backend is never flooded); seed 004 §2.1"
    rationale = """
When arrivals outrun the GPU, an unbounded queue keeps every request and every request
becomes late; users refresh (seed 004 §2.1: they wait 2 s) and add more. A bounded queue
refuses the excess early so the rest still meet the budget.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            bt = st.model.batching if st.model else None
            if bt is not None and bt.max_queue_size is None:
                yield ctx.at(bt, "max_batch_size", f"stage '{st.id}' batches without max_queue_size")
