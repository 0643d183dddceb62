"""AK703: a predicted token-level latency, throughput or SLO attainment misses its budget."""

from collections.abc import Iterator

from archkit.checks.common import llm_analyses
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class LlmBudgetOver(Rule):
    """Simulated TTFT, ITL, TPOT, e2e, output tokens/s or SLO attainment at the design rate misses its budget."""

    code = "AK703"
    name = "llm-budget-over"
    source = "docs/llm.md (TTFT, ITL, TPOT, goodput); seed 000 §2.1 (latency vs throughput)"
    rationale = """
The continuous-batching simulation (archkit.perf.llm.sim) runs the engine's scheduler at the
design rate: prefills compete with decodes for each iteration's token budget, and every
iteration's time follows the roofline of its FLOPs and bytes. A predicted percentile over its
budget is reported with the constraint that binds (weights, bandwidth, prefill compute, KV or
max_num_seqs) and the cheapest configuration found (GPU type x tensor parallel x replicas x
max_num_seqs x token budget) that meets every budget in simulation.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for a in llm_analyses(ctx):
            if a.summary is None:
                continue
            rec = a.recommendation.text() if a.recommendation else "none found in the search space"
            for v in a.missed:
                rel = "<" if v.higher_is_better else ">"
                yield ctx.at(
                    a.llm.budgets,
                    v.name,
                    f"stage '{a.stage.id}': predicted {v.name} {v.predicted:.3g} {rel} budget {v.budget:g} at "
                    f"{a.rate_rps:g} req/s over {a.replicas} replica(s) ({a.summary.requests:,} simulated "
                    f"requests); binds: {a.binding}; cheapest that meets all: {rec}",
                )
