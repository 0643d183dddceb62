"""AK334: a model's ONNX opset is newer than its serving engine's release loads."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic
from archkit.spec.onnx_opsets import engine_opset
from archkit.spec.serving import TritonBackend, backend_of

# The engine each backend runs a model with; the Python backend runs whichever its model.py imports,
# so the service's pinned framework decides. OpenVINO and the rest have no table here: not judged.
_ENGINE_OF: dict[TritonBackend, frozenset[str]] = {
    TritonBackend.onnxruntime: frozenset({"ONNX Runtime"}),
    TritonBackend.tensorrt: frozenset({"TensorRT"}),
    TritonBackend.python: frozenset({"ONNX Runtime", "TensorRT"}),
}


@register
class OnnxOpsetAboveEngine(Rule):
    """A model declares an ONNX opset above the highest its service's pinned engine release loads."""

    code = "AK334"
    name = "onnx-opset-above-engine"
    source = "seed 004 §3.1 (the opset must be one the serving engine supports: opset 17's Resize failed on TensorRT 8.2)"
    rationale = """
Seed 004 §3.1 pins the ONNX export to opset 15 because the opset has to be one the serving engine
implements: a model exported with opset 17 failed to load on TensorRT 8.2 (its Resize). An engine
release loads every opset up to the one it implements and none above. The ceiling comes from the
engines' own tables (archkit.spec.onnx_opsets): ONNX Runtime's compatibility table and the first line
of onnx-tensorrt's operators.md on each release branch (TensorRT 8.2: opset 13). The engine release is
the one the stage's service pins in `runtime.framework` (`onnxruntime-gpu==1.10.0`, `tensorrt==8.2.1`);
a service that pins none, or a release the tables do not list, is not judged.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None or m.opset is None or st.service is None:
                continue
            svc = ctx.spec.service(st.service)
            if svc is None or svc.runtime is None or svc.runtime.framework is None:
                continue
            backend = backend_of(m.format, m.backend)
            found = engine_opset(svc.runtime.framework)
            if found is None or backend is None or found.engine not in _ENGINE_OF.get(backend, frozenset()):
                continue
            if m.opset > found.max_opset:
                yield ctx.at(
                    m,
                    "opset",
                    f"model '{m.name}' of stage '{st.id}' is exported with opset {m.opset}, but {found.engine} "
                    f"{found.version} (service '{svc.id}' runtime.framework {svc.runtime.framework}) loads opsets "
                    f"up to {found.max_opset} ({found.source})",
                    hint=f"export with opset {found.max_opset} or lower, or upgrade {found.engine}",
                )
