"""AK608: an SLO names no series to count (no events, and its stage binds none)."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.slo_math import slo_problem


@register
class SloWithoutSeries(Rule):
    """An entry of `slos` cannot be compiled to rules."""

    code = "AK608"
    name = "slo-without-series"
    severity = Severity.ERROR
    source = "seed 000 §4.3 (every objective on the diagram needs a series that measures it)"
    rationale = """
An availability SLO needs bad (or good) and total events, given in the SLO or taken from its
stage's `errors` and `requests` in `observability.stages`; a latency SLO needs a threshold
and a histogram latency series on its stage. Without them no rule is generated for it.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for slo in ctx.spec.slos or []:
            problem = slo_problem(ctx.spec, slo)
            if problem is not None:
                field, message = problem
                yield ctx.at(slo, field if getattr(slo, field, None) is not None else "name", message)
