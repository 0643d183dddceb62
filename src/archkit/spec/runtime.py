"""A service's runtime versions (seed 000 §4.1) and the CUDA that NVIDIA's dated images lock.

Seed 000 §4.1 draws "Python 3.9 + PyTorch 2.0 + CUDA 11.8" on the diagram, builds the image on an
official NVIDIA base pinned to a patch release, and asserts the framework's version after
`pip install`, because a `pip install torch` that pulled a CUDA 12.1 build into a CUDA 11.8 image
stopped Triton from loading the model. `Service.runtime` holds what the diagram draws; rule AK325
compares it with the image's tag and the framework's local version (`+cu118`).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from archkit.spec.base import Node

Version = Annotated[
    str,
    Field(pattern=r"^\d+(\.\d+){0,3}$", max_length=32, description="a dotted version, e.g. 11.8 or 3.10.12"),
]


class Runtime(Node):
    """The versions a service's image is built with, as the architecture diagram draws them."""

    python: Version | None = Field(None, description="the Python the image runs, e.g. 3.10")
    framework: str | None = Field(
        None,
        max_length=128,
        description="the framework as pip names it, e.g. torch==2.0.1+cu118 (asserted after install)",
    )
    cuda: Version | None = Field(None, description="the CUDA the image ships, e.g. 11.8")
    driver: Version | None = Field(
        None, description="the NVIDIA driver of the nodes it runs on, e.g. 535.104.05"
    )


# The CUDA each monthly release of NVIDIA's NGC framework images (nvcr.io/nvidia/pytorch, tritonserver,
# tensorflow, ...) is based on: every framework container of one YY.MM release shares its CUDA. From
# NVIDIA's per-release notes ("Release YY.MM is based on CUDA ..."; the Deep Learning Frameworks
# Support Matrix). A release not listed is not judged. Checked against NVIDIA's Triton Inference Server
# release notes (docs.nvidia.com/deeplearning/triton-inference-server/release-notes/rel-YY-MM.html,
# "Driver Requirements": "Release YY.MM is based on CUDA ..."): 22.10 11.8.0, 23.03 and 23.04 12.1.0,
# 23.07 12.1.1, 23.09 12.2.1, 23.10 12.2.2 (seed 000 §4.1's pytorch:23.10 base), 23.12 12.3.2.
NGC_CUDA: dict[str, str] = {
    "22.03": "11.6.1",
    "22.05": "11.7.0",
    "22.10": "11.8.0",
    "22.11": "11.8.0",
    "22.12": "11.8.0",
    "23.03": "12.1.0",
    "23.04": "12.1.0",
    "23.07": "12.1.1",
    "23.09": "12.2.1",
    "23.10": "12.2.2",
    "23.12": "12.3.2",
    "24.05": "12.4.1",
}
# The oldest Linux driver that runs any CUDA of a major release (CUDA minor-version compatibility,
# NVIDIA "CUDA Compatibility" guide, table "CUDA Toolkit and minimum required driver version").
MIN_DRIVER: dict[int, str] = {11: "450.80.02", 12: "525.60.13"}

_NGC = re.compile(r"^nvcr\.io/nvidia/[^:@]+:(\d{2}\.\d{2})(?:[-.].*)?$")
_CUDA_TAG = re.compile(r"(?:^|[-_:])cuda[-_]?(\d+\.\d+(?:\.\d+)?)(?=$|[-_.a-z])")
_NVIDIA_CUDA = re.compile(r"^(?:docker\.io/)?nvidia/cuda:(\d+\.\d+(?:\.\d+)?)(?:[-.].*)?$")
_LOCAL_CU = re.compile(r"\+cu(\d+)(\d)\b")


def image_cuda(image: str) -> tuple[str, str] | None:
    """The CUDA an image's tag locks, and how that is known (None when the tag does not say)."""
    ref = image.split("@", 1)[0]
    m = _NGC.match(ref)
    if m:
        cuda = NGC_CUDA.get(m.group(1))
        return (cuda, f"NGC release {m.group(1)}") if cuda else None
    m = _NVIDIA_CUDA.match(ref)
    if m:
        return m.group(1), "the nvidia/cuda tag"
    tag = ref.rsplit("/", 1)[-1].split(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
    m = _CUDA_TAG.search(tag)
    return (m.group(1), f"the tag '{tag}'") if m else None


def framework_cuda(framework: str) -> str | None:
    """The CUDA a pip local version names (`torch==2.0.1+cu118` -> 11.8), or None."""
    m = _LOCAL_CU.search(framework)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def major_minor(version: str) -> tuple[int, ...]:
    """A dotted version's first two numbers (CUDA is ABI-compatible within a minor release)."""
    return tuple(int(p) for p in version.split(".")[:2])


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))
