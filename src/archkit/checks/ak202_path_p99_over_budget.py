"""AK202: the P99 of the requests reaching a data-flow sink does not fit the end-to-end P99 budget."""

from collections.abc import Iterator

from archkit.checks.common import fmt_ms, over_routes, sink_mixes
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class PathP99OverBudget(Rule):
    """Stage P99 budgets along a data-flow path add up to more than the end-to-end P99."""

    code = "AK202"
    name = "path-p99-over-budget"
    severity = Severity.WARNING
    source = (
        "seed 000 §3.1 (every stage carries P50/P99; the diagram must add up); seed 000 §2.1; "
        "seed 004 §2.1 (a dispatch's shares: fast OCR 0.3 s or precise 2 s)"
    )
    rationale = """
Two bounds are computed per path (the critical path to each sink): the sum of stage P99s,
a conservative bound that assumes every stage hits its P99 on the same request, and the
independent-stages estimate P50 sum + sqrt(Σ(P99ᵢ − P50ᵢ)²). A warning when only the
conservative sum exceeds the budget (the allocation is over-committed); an error when even
the independent estimate does (the budget cannot be met as allocated). The message names
the stage that eats most of the budget. Where requests take different routes (weighted
edges, a decision's exclusive edges, a cache hit past what it skips), both bounds are those
of the mixture of the routes' critical paths, each with its share of the requests
(`archkit.perf.branch_mix`): a branch that 10 % of the requests take holds the P99 of all of
them in its tail, so it sets the P99, at about its own 90th percentile.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        budget = ctx.spec.budgets.p99_ms
        if budget is None:
            return
        for m in sink_mixes(ctx):
            x = m.quantile(0.99)
            if x <= budget + 1e-9:
                continue
            rss = m.quantile(0.99, independent=True)
            sev = Severity.ERROR if rss > budget + 1e-9 else Severity.WARNING
            c = m.setter(x)
            p = c.path
            eats = 100 * p.dominant_p99 / p.p99_sum if p.p99_sum else 0
            head, mixed = over_routes(m, c, x, "P99", p.p99_sum)
            yield ctx.at(
                ctx.spec.budgets,
                "p99_ms",
                f"{head} > end-to-end P99 budget {fmt_ms(budget)} (independent-stages estimate "
                f"{fmt_ms(rss)}); '{p.dominant}' takes {fmt_ms(p.dominant_p99)} ({eats:.0f}%)",
                severity=sev,
                stages=p.stages,
                p99_sum_ms=p.p99_sum,
                p99_independent_ms=round(rss, 1),
                dominant=p.dominant,
                **mixed,
            )
