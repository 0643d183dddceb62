"""AK202: the P99 budgets along a data-flow path do not fit the end-to-end P99 budget."""

from collections.abc import Iterator

from archkit.checks.common import dataflow_latency, fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class PathP99OverBudget(Rule):
    """Stage P99 budgets along a data-flow path add up to more than the end-to-end P99."""

    code = "AK202"
    name = "path-p99-over-budget"
    severity = Severity.WARNING
    source = "seed 000 §3.1 (every stage carries P50/P99; the diagram must add up); seed 000 §2.1"
    rationale = """
Two bounds are computed per path (the critical path to each sink): the sum of stage P99s,
a conservative bound that assumes every stage hits its P99 on the same request, and the
independent-stages estimate P50 sum + sqrt(Σ(P99ᵢ − P50ᵢ)²). A warning when only the
conservative sum exceeds the budget (the allocation is over-committed); an error when even
the independent estimate does (the budget cannot be met as allocated). The message names
the stage that eats most of the budget.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        budget = ctx.spec.budgets.p99_ms
        if budget is None:
            return
        for p in dataflow_latency(ctx):
            if p.p99_sum <= budget + 1e-9:
                continue
            sev = Severity.ERROR if p.p99_rss > budget + 1e-9 else Severity.WARNING
            share = 100 * p.dominant_p99 / p.p99_sum if p.p99_sum else 0
            yield ctx.at(
                ctx.spec.budgets,
                "p99_ms",
                f"path {' -> '.join(p.stages)}: stage P99s add up to {fmt_ms(p.p99_sum)} "
                f"> end-to-end P99 budget {fmt_ms(budget)} (independent-stages estimate "
                f"{fmt_ms(p.p99_rss)}); '{p.dominant}' takes {fmt_ms(p.dominant_p99)} "
                f"({share:.0f}%)",
                severity=sev,
                stages=p.stages,
                p99_sum_ms=p.p99_sum,
                p99_independent_ms=round(p.p99_rss, 1),
                dominant=p.dominant,
            )
