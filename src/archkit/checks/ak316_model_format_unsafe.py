"""AK316: a model is shipped as a pickle or as Python code."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.model import ModelFormat

UNSAFE = {
    ModelFormat.pickle: "a pickle runs code when it is loaded and breaks on any library-version change",
    ModelFormat.python: "Python code is not a model artefact: it depends on the interpreter and its packages",
}


@register
class ModelFormatUnsafe(Rule):
    """A model stage declares format `pickle` or `python` instead of a self-contained artefact."""

    code = "AK316"
    name = "model-format-unsafe"
    source = 'seed 004 §3.1 ("models are data": TorchScript or ONNX only, never torch.load of a pickle)'
    rationale = """
Seed 004 §3.1 calls `torch.load()` of a pickled `.pt` the most dangerous operation in a
serving container: the pickle carries Python code (custom layers), so a small difference in
the production Python or library versions fails with ModuleNotFoundError — and a pickle
executes whatever it contains. The team's rule is "models are data": every model is exported
to TorchScript or ONNX (or an engine plan such as TensorRT) before it is served.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is not None and m.format in UNSAFE:
                yield ctx.at(
                    m,
                    "format",
                    f"model '{m.name}' of stage '{st.id}' is served as {m.format.value}: {UNSAFE[m.format]}",
                    hint="export it to TorchScript or ONNX",
                )
