"""AK612: a quantised model without its measured accuracy drop, or over its budget."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class QuantizationAccuracy(Rule):
    """A model is quantised and its accuracy drop is not stated, or exceeds the declared budget."""

    code = "AK612"
    name = "quantization-accuracy"
    severity = Severity.WARNING
    source = "seed 000 §5.10 (INT8 cost ResNet-50 0.8 % and YOLOv5 3.2 %; the node is marked 'quantization: dynamic, layers [Linear]')"
    rationale = """
Not every model survives INT8: seed 000 §5.10 measured ResNet-50 losing 0.8 % and YOLOv5
3.2 %, quantised only the linear layers dynamically and wrote the method on the diagram's
model-optimisation node. A quantised model states the accuracy it lost (`accuracy_drop`,
measured on its golden set); where the design sets `max_accuracy_drop`, a larger drop is an
error.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            q = m.quantization if m is not None else None
            if m is None or q is None or q.mode == "none":
                continue
            if q.accuracy_drop is None:
                yield ctx.at(
                    q, "mode", f"model '{m.name}' is quantised ({q.mode}) with no measured accuracy_drop"
                )
            elif q.max_accuracy_drop is not None and q.accuracy_drop > q.max_accuracy_drop:
                yield ctx.at(
                    q,
                    "accuracy_drop",
                    f"model '{m.name}' loses {q.accuracy_drop:.2%} to {q.mode} quantisation "
                    f"(budget {q.max_accuracy_drop:.2%})",
                    severity=Severity.ERROR,
                )
