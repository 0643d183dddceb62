"""AK704: the workload's longest prompt plus output exceeds the model's context."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class LlmPromptOverContext(Rule):
    """The largest prompt plus the largest output is longer than the model's maximum context."""

    code = "AK704"
    name = "llm-prompt-over-context"
    source = "docs/llm.md; each model's config.json max_position_embeddings (sources.md M1-M6)"
    rationale = """
An engine refuses a request whose prompt plus requested output exceeds the model's maximum
context (vLLM: HTTP 400 "maximum context length"), and a serving cap (`max_context_tokens`,
vLLM `--max-model-len`) set below the model's lowers it further. A workload whose distribution
reaches past it produces errors, not slow answers: bound the prompt (`max_tokens`, truncating
retrieval) or raise the context.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            llm = st.llm
            if llm is None:
                continue
            ctx_max = llm.model.architecture().max_context_tokens
            p, o = llm.workload.prompt_tokens, llm.workload.output_tokens
            p_max = p.max_tokens or (int(p.mean_tokens or 0) if p.distribution == "fixed" else None)
            o_max = o.max_tokens or (int(o.mean_tokens or 0) if o.distribution == "fixed" else None)
            if p_max is None or o_max is None:
                if p_max is None:
                    yield ctx.at(
                        p,
                        "distribution",
                        f"stage '{st.id}': the {p.distribution} prompt length has no max_tokens; prompts past the "
                        f"context ({ctx_max:,} tokens) are refused",
                    )
                continue
            if p_max + o_max > ctx_max:
                yield ctx.at(
                    p,
                    "max_tokens" if p.max_tokens else "mean_tokens",
                    f"stage '{st.id}': prompt up to {p_max:,} + output up to {o_max:,} tokens > the model's context "
                    f"{ctx_max:,}",
                )
