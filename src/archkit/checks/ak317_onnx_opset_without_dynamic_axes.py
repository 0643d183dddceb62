"""AK317: a batched ONNX model's opset is too old for dynamic batch axes."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import ModelFormat

MIN_DYNAMIC_OPSET = 14  # seed 004 §3.1: "opset_version=15  # must be >= 14, else no dynamic axes"


@register
class OnnxOpsetWithoutDynamicAxes(Rule):
    """An ONNX model that is batched declares an opset below 14."""

    code = "AK317"
    name = "onnx-opset-without-dynamic-axes"
    source = "seed 004 §3.1 (export with opset ≥ 14 for dynamic axes; the team standardised on 15)"
    rationale = """
A model that the server batches needs a dynamic batch axis in its exported graph. Seed 004
§3.1 exports ONNX with `opset_version=15` and notes that opsets below 14 do not support the
dynamic axes it needs; it also warns that the opset must match the serving engine (opset 17's
Resize failed to load on TensorRT 8.2), so the team uses 15 everywhere.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None or m.format != ModelFormat.onnx or m.opset is None:
                continue
            size = m.batching.max_batch_size if m.batching is not None else 1
            if size > 1 and m.opset < MIN_DYNAMIC_OPSET:
                yield ctx.at(
                    m,
                    "opset",
                    f"model '{m.name}' of stage '{st.id}' batches up to {size} "
                    f"but is exported with opset {m.opset} (< {MIN_DYNAMIC_OPSET}: no dynamic batch axis)",
                )
