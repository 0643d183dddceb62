"""AK398: a model's declared Triton backend cannot load its format."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.serving import LOADS


@register
class BackendCannotLoadFormat(Rule):
    """A model declares a serving backend that does not load its format (TensorRT for an ONNX file)."""

    code = "AK398"
    name = "backend-cannot-load-format"
    source = "seed 004 §3.1 (the model file must match the engine that loads it)"
    rationale = """
Seed 004 §3.1: a model exported for one inference engine fails to load on another (opset 17's
Resize on TensorRT 8.2). A spec that names `model.backend` other than its format's default
(archkit.spec.serving) says which runtime its service times were measured on; a backend that
cannot read the file at all — TensorRT for an ONNX file, onnxruntime for TorchScript — is a
model that never becomes ready. The Python backend runs whatever its model.py loads; OpenVINO's
reads ONNX besides its own IR.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None or m.backend is None:
                continue
            loads = LOADS[m.backend]
            if loads is not None and m.format.value not in loads:
                yield ctx.at(
                    m,
                    "backend",
                    f"model '{m.name}' of stage '{st.id}' is {m.format.value} but declares the {m.backend.value} "
                    f"backend, which loads only {', '.join(sorted(loads))}",
                    hint="declare the backend that runs this format (python runs any format from model.py)",
                )
