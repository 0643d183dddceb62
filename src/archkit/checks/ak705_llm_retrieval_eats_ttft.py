"""AK705: the stages before an LLM leave too little of the user's time-to-first-token budget."""

from collections.abc import Iterator

from archkit.checks.common import llm_analyses
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.perf.llm.analysis import pre_llm_ms


@register
class LlmRetrievalEatsTtft(Rule):
    """Retrieval and other stages before the LLM plus its predicted TTFT exceed `user_ttft_p99_ms`."""

    code = "AK705"
    name = "llm-retrieval-eats-ttft"
    source = "seed 004 §1 (design from the user's end-to-end flow); docs/llm.md (TTFT)"
    rationale = """
The user waits for the gateway, the embedding, the vector search and the reranker before the LLM
even starts its prefill: their P99 budgets add to the LLM's TTFT end to end. The rule adds the
P99 budgets along the longest data-flow path into the LLM stage (a sum of P99s is a conservative
bound) to the predicted TTFT P99 and compares the total with `budgets.user_ttft_p99_ms`.
Without streaming (`workload.streaming: false`) the user's first token arrives with the last
one, so the predicted end-to-end P99 takes the TTFT's place.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for a in llm_analyses(ctx):
            budget = a.llm.budgets.user_ttft_p99_ms
            if budget is None or a.summary is None:
                continue
            pre, path = pre_llm_ms(ctx.spec, a.stage)
            streaming = a.llm.workload.streaming
            ttft = a.summary.ttft_ms["p99"] if streaming else a.summary.e2e_ms["p99"]
            what = "TTFT" if streaming else "e2e (not streamed)"
            if pre + ttft > budget:
                # a budget of 0 ms is schema-valid (the fuzz run of issue 28 found the division)
                share = f"{100 * pre / budget:.0f} % of the budget" if budget > 0 else "the budget is 0 ms"
                yield ctx.at(
                    a.llm.budgets,
                    "user_ttft_p99_ms",
                    f"stage '{a.stage.id}': {' -> '.join(path) or 'no stage'} take {pre:g} ms P99 ({share}) + "
                    f"predicted {what} P99 {ttft:.0f} ms = {pre + ttft:.0f} ms > user_ttft_p99_ms {budget:g}",
                )
