"""AK702: the KV cache holds fewer sequences than the workload keeps running."""

from collections.abc import Iterator

from archkit.checks.common import llm_analyses
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class LlmKvBelowConcurrency(Rule):
    """The KV cache of all replicas holds fewer sequences than declared, or the design rate preempts."""

    code = "AK702"
    name = "llm-kv-below-concurrency"
    source = "docs/llm.md (concurrency = KV capacity / tokens per sequence, or max_num_seqs); vLLM preemption"
    rationale = """
Each running sequence holds KV blocks for its prompt and output so far. When the cache is full
the engine preempts the newest sequence and later recomputes it (vLLM V1), which wastes prefill
work and stalls that user's stream. The rule fires when `workload.max_concurrency` exceeds what
the replicas' caches hold at the mean sequence length, or when the simulation at the design rate
preempts at all.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for a in llm_analyses(ctx):
            if a.rep is None or not a.fits:
                continue
            held = a.concurrency * a.replicas
            want = a.llm.workload.max_concurrency
            seq = int(a.prompt_mean + a.output_mean)
            if want is not None and want > held:
                yield ctx.at(
                    a.llm.workload,
                    "max_concurrency",
                    f"stage '{a.stage.id}': {a.replicas} replica(s) hold {held} sequences of {seq} tokens "
                    f"({a.rep.kv_tokens:,} KV tokens each, bound by {a.concurrency_binds}) < max_concurrency {want}",
                )
            elif a.summary is not None and a.summary.preemptions > 0:
                yield ctx.at(
                    a.llm.engine,
                    "max_num_seqs",
                    f"stage '{a.stage.id}': at {a.rate_rps:g} req/s the KV cache ({a.rep.kv_tokens:,} tokens per "
                    f"replica) runs out: {a.summary.preemptions} preemptions in {a.summary.requests:,} simulated requests",
                )
