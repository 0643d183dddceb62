"""Inference runtimes for the two ONNX models: one interface, three engines.

- ``onnxruntime``: ONNX Runtime's CPU (or CUDA) execution provider; the first version.
- ``openvino``: OpenVINO's CPU plugin on the same ONNX file, in bf16 where the CPU has
  AVX-512 BF16 or AMX, else the faster of int8 (NNCF-quantised IR, quantise.py) and f32 that
  keeps the accuracy (``choose_precision``). Measured on one core (MEASUREMENTS.md, "ablation"):
  recogniser at 48x800 55 -> 23 ms, detector at 576x960 135 -> 66 ms, at the same golden-set
  accuracy; it fuses PP-LCNet's affine + hard-swish chains into the convolutions, which
  ONNX Runtime leaves as separate element-wise passes (a third of its time).
- ``torch``: the ONNX graph converted to PyTorch with onnx2torch, on CUDA in fp16 (the
  ``gpu`` profile: the GPU machine has PyTorch but no onnxruntime-gpu or TensorRT) or on
  the CPU in fp32, which is how CI tests the same code.

Each runner owns one compiled model and runs it with ``threads`` intra-op threads, so that
instances, not threads, use the cores (on 2 cores a shared thread pool oversubscribed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import numpy as np

BACKEND_ENV = "OCR_BACKEND"  # onnxruntime | openvino | torch; unset: the profile's choice
PRECISION_ENV = "OCR_PRECISION"  # bf16 | int8 | f32 (f16 for torch) | auto; unset: auto
BACKENDS = ("onnxruntime", "openvino", "torch")


class Runner(Protocol):
    """One model: a float32 NCHW batch in, the first output as float32 out."""

    backend: str
    precision: str

    def __call__(self, x: np.ndarray) -> np.ndarray: ...

    def metadata(self, key: str) -> str: ...


def available(backend: str) -> bool:
    """Whether ``backend``'s Python package can be imported here."""
    import importlib.util

    module = {"onnxruntime": "onnxruntime", "openvino": "openvino", "torch": "onnx2torch"}[backend]
    return importlib.util.find_spec(module) is not None and (
        backend != "torch" or importlib.util.find_spec("torch") is not None
    )


def choose(preferred: tuple[str, ...]) -> str:
    """$OCR_BACKEND if set, else the first of ``preferred`` that is installed."""
    want = os.environ.get(BACKEND_ENV, "").strip()
    if want:
        if want not in BACKENDS:
            raise ValueError(f"{BACKEND_ENV}={want!r}: choose one of {', '.join(BACKENDS)}")
        return want
    return next((b for b in preferred if available(b)), "onnxruntime")


class OrtRunner:
    """ONNX Runtime: CUDA provider first when this build offers it, else CPU."""

    backend = "onnxruntime"

    def __init__(self, path: Path, threads: int = 1) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.enable_cpu_mem_arena = False
        opts.log_severity_level = 3
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        have = ort.get_available_providers()
        providers = [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in have]
        self.sess = ort.InferenceSession(str(path), sess_options=opts, providers=providers)
        self.input_name = self.sess.get_inputs()[0].name
        self.precision = "f32"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.sess.run(None, {self.input_name: x})[0])

    def metadata(self, key: str) -> str:
        return str(self.sess.get_modelmeta().custom_metadata_map[key])


class OpenVinoRunner:
    """OpenVINO CPU plugin at ``choose_precision``'s precision (int8: the quantised IR file)."""

    backend = "openvino"

    def __init__(self, path: Path, threads: int = 1, precision: str | None = None) -> None:
        import openvino as ov

        self.precision = precision or default_precision(self.backend)
        core = ov.Core()
        self.model = core.read_model(str(path))
        config = {
            "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32" if self.precision == "int8" else self.precision,
            # Other processes share these cores: pinning a thread to one would fight them.
            "ENABLE_CPU_PINNING": False,
        }
        self.request = core.compile_model(self.model, "CPU", config).create_infer_request()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.request.infer({0: x})
        # Copy: the output tensor's memory is reused by the next inference.
        return np.array(self.request.get_output_tensor(0).data, dtype=np.float32)

    def metadata(self, key: str) -> str:
        return str(self.model.get_rt_info(["framework", key]).astype(str))


def _stub_torchvision() -> None:
    """Let onnx2torch import without torchvision, which the GPU machine may lack.

    onnx2torch imports torchvision for its NonMaxSuppression and RoiAlign converters only;
    neither op is in the PP-OCR graphs, so a stand-in whose functions raise is enough.
    """
    import importlib.util
    import sys
    import types

    if "torchvision" in sys.modules or importlib.util.find_spec("torchvision") is not None:
        return

    def missing(*_args: object, **_kwargs: object) -> None:
        raise NotImplementedError("torchvision is not installed; this ONNX op needs it")

    tv, ops = types.ModuleType("torchvision"), types.ModuleType("torchvision.ops")
    for name in ("nms", "batched_nms", "box_convert", "roi_align"):
        setattr(ops, name, missing)
    tv.ops = ops  # type: ignore[attr-defined]
    sys.modules["torchvision"], sys.modules["torchvision.ops"] = tv, ops


def _constants_as_initializers(model):  # onnx.ModelProto in, the same object out
    """Move Constant nodes' tensors into the graph's initializers.

    Paddle2ONNX writes the PP-OCR weights as Constant nodes; onnx2torch reads convolution and
    matrix weights from initializers only. Same tensors, same names: the computation is
    unchanged.
    """
    from onnx import helper

    graph = model.graph
    keep = []
    for node in graph.node:
        value = next((a for a in node.attribute if a.name == "value"), None)
        if node.op_type == "Constant" and value is not None:
            tensor = helper.get_attribute_value(value)
            tensor.name = node.output[0]
            graph.initializer.append(tensor)
        else:
            keep.append(node)
    del graph.node[:]
    graph.node.extend(keep)
    return model


def _shaped_for_torch(model):  # onnx.ModelProto in, a shape-inferred copy out
    """Shape-infer the graph; BatchNorm inputs it cannot follow are NCHW (rank 4).

    onnx2torch picks BatchNorm1d/2d/3d from the input's rank. ONNX shape inference loses
    track after the recogniser's dynamic-width reshapes; every BatchNorm in the PP-OCR
    graphs follows a 2-D convolution, so rank 4 is what they are.
    """
    import onnx
    from onnx import helper

    model = onnx.shape_inference.infer_shapes(model)
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in model.graph.value_info}
    for node in model.graph.node:
        if node.op_type == "BatchNormalization" and ranks.get(node.input[0], 0) == 0:
            info = helper.make_tensor_value_info(node.input[0], onnx.TensorProto.FLOAT, ["n", "c", "h", "w"])
            model.graph.value_info.append(info)
    return model


class TorchRunner:
    """onnx2torch module on CUDA (fp16 by default) or on the CPU (fp32)."""

    backend = "torch"

    def __init__(
        self, path: Path, threads: int = 1, precision: str | None = None, device: str | None = None
    ) -> None:
        import onnx
        import torch

        _stub_torchvision()
        from onnx2torch import convert

        self.torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.precision = precision or ("f16" if self.device.startswith("cuda") else "f32")
        if self.device == "cpu":
            torch.set_num_threads(threads)
        self.onnx_model = _shaped_for_torch(_constants_as_initializers(onnx.load(str(path))))
        dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[self.precision]
        self.dtype = dtype
        self.module = convert(self.onnx_model).eval().to(self.device, dtype=dtype)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        torch = self.torch
        with torch.inference_mode():
            t = torch.from_numpy(x).to(self.device, dtype=self.dtype, non_blocking=True)
            out = self.module(t)
            if isinstance(out, (list, tuple)):
                out = out[0]
            return out.float().cpu().numpy()

    def metadata(self, key: str) -> str:
        return next(p.value for p in self.onnx_model.metadata_props if p.key == key)


PRECISIONS = ("bf16", "int8", "f32")  # what OpenVINO runs here; "auto" chooses among them
# Flags (as /proc/cpuinfo spells them) with which OpenVINO's CPU plugin runs bf16 natively.
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
# The measured choice where bf16 is absent: (precision, CPU ms per golden page for detector +
# recogniser on one core, golden-set accuracy), in-process, OpenVINO 2026.4.1, all 60 pages
# (reference_service/scripts/compare_backends.py --precisions; MEASUREMENTS.md "int8 on the
# AVX2 path"). Forced f32/int8 on a Zen 5 EPYC (AVX-512 BF16 present but unused by the forced
# precision); OpenVINO may still pick AVX-512 kernels for f32/int8 (ONEDNN_MAX_CPU_ISA=AVX2
# crashes its CPU plugin, so no true AVX2-only figure exists yet).
NO_BF16_MEASURED: tuple[tuple[str, float, float], ...] = (
    ("int8", 120.5, 0.9965),  # NNCF MIXED preset, both models (load 0.9)
    ("f32", 171.1, 0.9991),  # (load ~10; thread CPU moves little with load)
)
ACCURACY_FLOOR = 0.99  # issue 34's bar on the golden set


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The ISA flags of the first CPU in /proc/cpuinfo (or of ``cpuinfo``'s text)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def choose_precision(flags: frozenset[str], int8_ready: bool, forced: str | None = None) -> str:
    """OpenVINO's precision for a CPU with these ISA ``flags``.

    ``forced`` ($OCR_PRECISION: bf16 | int8 | f32 | auto) wins unless it is auto or empty.
    Else bf16 where the CPU has AVX-512 BF16 or AMX (it halves the convolutions there and int8
    gained nothing on top, MEASUREMENTS.md); else the fastest of NO_BF16_MEASURED that keeps
    the golden set's accuracy, int8 only when its files exist (``int8_ready``).
    """
    want = (forced or "").strip().lower()
    if want and want != "auto":
        if want not in PRECISIONS:
            raise ValueError(f"{PRECISION_ENV}={forced!r}: choose one of {', '.join(PRECISIONS)} or auto")
        return want
    if flags & BF16_FLAGS:
        return "bf16"
    fit = [
        (ms, p) for p, ms, acc in NO_BF16_MEASURED if acc >= ACCURACY_FLOOR and (p != "int8" or int8_ready)
    ]
    return min(fit)[1] if fit else "f32"


def default_precision(backend: str) -> str:
    """The precision ``make_runner`` gives ``backend`` on this machine, without loading a model:
    $OCR_PRECISION when set (and not auto), else the backend's choice for this CPU. The
    gateway reports it in /v1/models (and so in a calibration's fingerprint), so both use this.

    The outputs depend on it (bf16, int8 and f32 read some golden lines differently), so
    rollback verification compares a service with the golden outputs of the precision it runs.
    """
    want = os.environ.get(PRECISION_ENV, "").strip()
    if backend == "onnxruntime":
        return "f32"  # OrtRunner has no precision switch
    if backend == "openvino":
        from .quantise import have_int8

        return choose_precision(cpu_flags(), have_int8(), want)
    if backend == "torch":
        if want and want != "auto":
            return want
        import torch

        return "f16" if torch.cuda.is_available() else "f32"
    raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def make_runner(path: Path, backend: str, threads: int = 1) -> Runner:
    """A runner for the ONNX file at ``path`` at ``default_precision(backend)``."""
    precision = default_precision(backend)
    if backend == "openvino":
        if precision == "int8":
            from .quantise import int8_dir, int8_file

            int8 = int8_dir() / int8_file(path.name)
            if not int8.is_file():
                raise FileNotFoundError(
                    f"{PRECISION_ENV}=int8: {int8} is missing; make it with `python -m reference_service quantise`"
                )
            # The quantised graph carries its int8 ops; the rest runs in f32.
            return OpenVinoRunner(int8, threads, "int8")
        return OpenVinoRunner(path, threads, precision)
    if backend == "torch":
        return TorchRunner(path, threads, precision)
    if backend == "onnxruntime":
        return OrtRunner(path, threads)
    raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
