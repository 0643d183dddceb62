"""The highest ONNX opset each serving engine's release loads, from the engines' own tables.

Seed 004 §3.1: a model exported with an opset its engine does not implement never loads (opset 17's
Resize on TensorRT 8.2), so the team exports with opset 15 everywhere. Rule AK334 compares a model's
declared `opset` with the engine release its service's `runtime.framework` names. A release that is
not listed here is not judged: every row below is copied from the source named beside its table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["EngineOpset", "engine_opset"]

# ONNX Runtime "ONNX opset support" table, column "ONNX opset version" per release
# (https://onnxruntime.ai/docs/reference/compatibility.html#onnx-opset-support; the page's source is
# microsoft/onnxruntime docs/reference/compatibility.md). A release runs every opset from 7 to its own.
ORT_SOURCE = "ONNX Runtime compatibility table (onnxruntime.ai/docs/reference/compatibility.html)"
ORT: dict[tuple[int, int], int] = {
    (1, 0): 11,
    (1, 1): 11,
    (1, 2): 11,
    (1, 3): 12,
    (1, 4): 12,
    (1, 5): 12,
    (1, 6): 13,
    (1, 7): 13,
    (1, 8): 14,
    (1, 9): 15,
    (1, 10): 15,
    (1, 11): 16,
    (1, 12): 17,
    (1, 13): 17,
    (1, 14): 18,
    (1, 15): 19,
    (1, 16): 19,
    (1, 17): 20,
    (1, 18): 21,
    (1, 19): 21,
    (1, 20): 21,
}

# TensorRT's ONNX parser, first line of docs/operators.md on each onnx-tensorrt release branch
# (https://github.com/onnx/onnx-tensorrt/blob/release/8.2-GA/docs/operators.md: "TensorRT 8.2 supports
# operators up to Opset 13"; release/7.2.1, 8.0-GA: 13; 8.4-GA, 8.5-GA, 8.6-GA: 17; 9.0-GA to 9.3: 19;
# 10.0-GA: "the inclusive range of opset 9 to opset 20").
TRT_SOURCE = "onnx-tensorrt docs/operators.md of release/{v} (github.com/onnx/onnx-tensorrt)"
TRT: dict[tuple[int, int], tuple[int, str]] = {  # release -> (highest opset, onnx-tensorrt branch)
    (7, 2): (13, "7.2.1"),
    (8, 0): (13, "8.0-GA"),
    (8, 2): (13, "8.2-GA"),
    (8, 4): (17, "8.4-GA"),
    (8, 5): (17, "8.5-GA"),
    (8, 6): (17, "8.6-GA"),
    (9, 0): (19, "9.0-GA"),
    (9, 1): (19, "9.1"),
    (9, 2): (19, "9.2"),
    (9, 3): (19, "9.3"),
    (10, 0): (20, "10.0-GA"),
}

# The pip distributions of each engine (`runtime.framework` is written as pip names it).
_ENGINES = {
    "onnxruntime": "ONNX Runtime",
    "onnxruntime-gpu": "ONNX Runtime",
    "tensorrt": "TensorRT",
}
_PIN = re.compile(r"^\s*(?P<name>[A-Za-z0-9_.-]+)\s*==\s*(?P<major>\d+)\.(?P<minor>\d+)(?:[.+\w-]*)\s*$")


@dataclass(frozen=True)
class EngineOpset:
    """The engine a framework pin names, its release, the highest opset it loads and where that is said."""

    engine: str  # "ONNX Runtime" or "TensorRT"
    version: str  # major.minor
    max_opset: int
    source: str


def engine_opset(framework: str) -> EngineOpset | None:
    """The opset ceiling of a pinned engine (`onnxruntime-gpu==1.10.0`, `tensorrt==8.2.1.8`), or None
    when the pin names another package, no exact version, or a release the tables do not list."""
    m = _PIN.match(framework)
    if m is None:
        return None
    engine = _ENGINES.get(m.group("name").lower().replace("_", "-"))
    release = (int(m.group("major")), int(m.group("minor")))
    version = f"{release[0]}.{release[1]}"
    if engine == "ONNX Runtime" and release in ORT:
        return EngineOpset(engine, version, ORT[release], ORT_SOURCE)
    if engine == "TensorRT" and release in TRT:
        ceiling, branch = TRT[release]
        return EngineOpset(engine, version, ceiling, TRT_SOURCE.format(v=branch))
    return None
