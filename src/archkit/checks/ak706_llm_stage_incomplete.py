"""AK706: an LLM stage whose engine, section or accelerator cannot be analysed."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import StageKind


@register
class LlmStageIncomplete(Rule):
    """A `kind: llm` stage without an `llm` section, an `llm` section on another kind, or no known accelerator."""

    code = "AK706"
    name = "llm-stage-incomplete"
    source = "docs/llm.md; design principle D3 (every reference resolves)"
    rationale = """
An LLM stage is analysed from its `llm` section (engine, model, workload) on an accelerator: its
own `llm.accelerator.type`, or the GPU model of the node pool its service runs on. Without
either, memory, KV capacity and step times cannot be computed and every other AK7xx rule stays
silent. An `llm` section on a stage of another kind is ignored by the analysis.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        from archkit.perf.llm.analysis import device_of

        for st in ctx.spec.dataflow.stages:
            if st.kind is StageKind.llm and st.llm is None:
                yield ctx.at(st, "kind", f"stage '{st.id}' is kind llm but has no llm section")
            elif st.llm is not None and st.kind is not StageKind.llm:
                yield ctx.at(
                    st, "llm", f"stage '{st.id}' has an llm section but is kind {st.kind.value}, not llm"
                )
            elif st.llm is not None and device_of(ctx.spec, st) is None:
                yield ctx.at(
                    st.llm,
                    "accelerator",
                    f"stage '{st.id}': no accelerator: set llm.accelerator.type or run it on a service whose "
                    "node pool has a catalogue GPU (gpu.model)",
                )
