"""AK201: the P50 of the requests reaching a data-flow sink is over the end-to-end P50 budget."""

from collections.abc import Iterator

from archkit.checks.common import fmt_ms, over_routes, sink_mixes
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class PathP50OverBudget(Rule):
    """Stage P50 budgets along a data-flow path add up to more than the end-to-end P50."""

    code = "AK201"
    name = "path-p50-over-budget"
    source = (
        "seed 000 §3.1 (per-stage P50/P99 on the data-flow diagram); seed 000 §2.1; "
        "seed 004 §2.1 (a dispatch's shares: fast OCR 0.3 s or precise 2 s)"
    )
    rationale = """
Medians of stages in series roughly add (exactly for means). If the stages' P50 budgets on
one path already exceed the end-to-end P50 budget, the typical request misses it before any
queueing or tail effect. Sync edges only: async hand-offs do not add to the caller's wait.
Where requests take different routes (weighted edges, a decision's exclusive edges, a cache
hit past what it skips), the P50 is that of the mixture of the routes' critical paths, each
with its share of the requests (`archkit.perf.branch_mix`): a branch that 10 % of the
requests take does not set the P50 unless its share makes it so.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        budget = ctx.spec.budgets.p50_ms
        if budget is None:
            return
        for m in sink_mixes(ctx):
            x = m.quantile(0.5)
            if x <= budget + 1e-9:
                continue
            c = m.setter(x)
            p = c.path
            text, mixed = over_routes(m, c, x, "P50", p.p50_sum)
            yield ctx.at(
                ctx.spec.budgets,
                "p50_ms",
                f"{text} > end-to-end P50 budget {fmt_ms(budget)}",
                stages=p.stages,
                p50_sum_ms=p.p50_sum,
                **mixed,
            )
