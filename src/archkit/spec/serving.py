"""Which Triton backend serves a model: the format's default unless the spec says otherwise.

A model's `format` names its files; the backend is the code that runs them. Usually the one
follows from the other (ONNX → onnxruntime), but not always: the reference OCR service ships
ONNX files and serves them with OpenVINO from Triton's Python backend
(reference_service/triton_native.py), so its spec declares `backend: python`. One definition for
the Triton generator (which writes `backend:` into config.pbtxt), the rule that a backend can load
the format (AK398) and verify's VT239 (which compares the live model's backend with it).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["DEFAULT_BACKEND", "LOADS", "TritonBackend", "backend_of"]


class TritonBackend(str, Enum):
    """Triton's backend names (the `backend` field of a model's config.pbtxt)."""

    onnxruntime = "onnxruntime"
    pytorch = "pytorch"
    tensorrt = "tensorrt"
    tensorflow = "tensorflow"
    openvino = "openvino"
    python = "python"
    fil = "fil"


# The backend Triton uses for each model format when the spec names none (Triton's backends:
# onnxruntime, pytorch, tensorrt, tensorflow, python; fil — the Forest Inference Library — serves
# XGBoost). A pickled model is loaded by Python code; `other` has no backend archkit can name.
DEFAULT_BACKEND: dict[str, TritonBackend | None] = {
    "onnx": TritonBackend.onnxruntime,
    "torchscript": TritonBackend.pytorch,
    "tensorrt": TritonBackend.tensorrt,
    "savedmodel": TritonBackend.tensorflow,
    "python": TritonBackend.python,
    "pickle": TritonBackend.python,
    "xgboost": TritonBackend.fil,
    "other": None,
}

# The formats each backend loads (Triton's backend READMEs): the Python backend runs whatever its
# model.py loads, OpenVINO's reads ONNX besides its own IR (format `other`), TensorRT's only plans.
LOADS: dict[TritonBackend, frozenset[str] | None] = {
    TritonBackend.onnxruntime: frozenset({"onnx"}),
    TritonBackend.pytorch: frozenset({"torchscript"}),
    TritonBackend.tensorrt: frozenset({"tensorrt"}),
    TritonBackend.tensorflow: frozenset({"savedmodel"}),
    TritonBackend.openvino: frozenset({"onnx", "other"}),
    TritonBackend.python: None,
    TritonBackend.fil: frozenset({"xgboost"}),
}


def backend_of(fmt: str, declared: TritonBackend | None) -> TritonBackend | None:
    """The backend serving a model of format `fmt`: the declared one, else the format's default."""
    return declared if declared is not None else DEFAULT_BACKEND.get(str(getattr(fmt, "value", fmt)))
