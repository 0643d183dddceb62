"""AK212: batch sizes the batcher may form lie beyond the measured service times."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class ServiceTimeExtrapolated(Rule):
    """`max_batch_size` is larger than the largest measured batch: predictions extrapolate."""

    code = "AK212"
    name = "service-time-extrapolated"
    severity = Severity.WARNING
    source = "seed 000 §2.1 (PCIe copy grows linearly with batch, compute does not shrink as hoped)"
    rationale = """
archkit interpolates service time linearly between measured batch sizes and extrapolates
beyond the largest one. The seed's own numbers show why that is risky: copy time grew
7× from batch 1 to 8 while compute fell only from 32 to 22 ms per image. Measure the
largest batch the server may form.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None or m.batching is None or not m.service_time:
                continue
            largest = max(t.batch_size for t in m.service_time)
            if m.batching.max_batch_size > largest:
                yield ctx.at(
                    m.batching,
                    "max_batch_size",
                    f"stage '{st.id}' may form batches of {m.batching.max_batch_size} but service "
                    f"time is measured up to {largest} only",
                )
