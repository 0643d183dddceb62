"""AK601: a stage has no latency metric."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class StageWithoutLatencyMetric(Rule):
    """A data-flow stage has no latency series in `observability.stages`."""

    code = "AK601"
    name = "stage-without-latency-metric"
    severity = Severity.WARNING
    source = "seed 000 §4.3 (a P99 on the diagram without a histogram in the code is a castle in the air)"
    rationale = """
Every budget on the diagram needs a series that measures it, or no alert, load-test verdict
or `archkit verify` can hold the stage to it. Name the latency metric of each stage
(a histogram, or Triton's cumulative *_duration_us counters).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        measured = {m.stage for m in spec.observability.stages if m.latency is not None}
        for st in spec.dataflow.stages:
            if st.id not in measured:
                yield ctx.at(st, "id", f"stage '{st.id}' has no latency metric in observability.stages")
