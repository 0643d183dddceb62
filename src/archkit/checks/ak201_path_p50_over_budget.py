"""AK201: the P50s along a data-flow path add up to more than the end-to-end P50 budget."""

from collections.abc import Iterator

from archkit.checks.common import dataflow_latency, fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class PathP50OverBudget(Rule):
    """Stage P50 budgets along a data-flow path add up to more than the end-to-end P50."""

    code = "AK201"
    name = "path-p50-over-budget"
    source = "seed 000 §3.1 (per-stage P50/P99 on the data-flow diagram); seed 000 §2.1"
    rationale = """
Medians of stages in series roughly add (exactly for means). If the stages' P50 budgets on
one path already exceed the end-to-end P50 budget, the typical request misses it before any
queueing or tail effect. Sync edges only: async hand-offs do not add to the caller's wait.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        budget = ctx.spec.budgets.p50_ms
        if budget is None:
            return
        for p in dataflow_latency(ctx):
            if p.p50_sum > budget + 1e-9:
                yield ctx.at(
                    ctx.spec.budgets,
                    "p50_ms",
                    f"path {' -> '.join(p.stages)}: stage P50s add up to {fmt_ms(p.p50_sum)} "
                    f"> end-to-end P50 budget {fmt_ms(budget)}",
                    stages=p.stages,
                    p50_sum_ms=p.p50_sum,
                )
