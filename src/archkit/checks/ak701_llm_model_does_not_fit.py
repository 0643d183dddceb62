"""AK701: an LLM's weights do not fit the memory its engine may use on each GPU."""

from collections.abc import Iterator

from archkit.checks.common import llm_analyses
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class LlmModelDoesNotFit(Rule):
    """The model's weights (per GPU, after tensor and pipeline parallelism) leave no room for one sequence's KV cache."""

    code = "AK701"
    name = "llm-model-does-not-fit"
    source = "docs/llm.md (KV capacity = memory x utilisation - weights - reserve); sources.md G1-G8, M1-M6"
    rationale = """
An engine takes `gpu_memory_utilization` of each GPU's memory for weights, activations and the KV
cache. Weights are parameters x bytes per weight (bf16: 2, fp8: 1, AWQ/GPTQ int4: ~0.53), split
over tensor x pipeline GPUs; the activation reserve grows with the token budget. When what is left
cannot hold one sequence's KV blocks the engine refuses to start (vLLM: "No available memory for
the cache blocks"). Quantise, add tensor parallelism, or choose a larger GPU.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for a in llm_analyses(ctx):
            r = a.rep
            if r is None or a.device is None or a.fits:
                continue
            m = a.memory()
            yield ctx.at(
                a.llm.model,
                "preset" if a.llm.model.preset else "parameters",
                f"stage '{a.stage.id}': {r.arch.name} needs {m['weights_gb']:.1f} GB of weights per GPU "
                f"(TP{r.tensor} x PP{r.pipeline}) + {m['reserve_gb']:.1f} GB reserve, but {a.device.name} offers "
                f"{m['usable_gb']:.1f} GB ({m['device_gb']:g} GB x {r.gpu_memory_utilization:g}): no room for the "
                f"KV cache of one {int(a.prompt_mean + a.output_mean)}-token sequence",
            )
