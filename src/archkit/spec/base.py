"""The spec model's foundation: identifiers, units with their bounds, the `Node` base and tree walks.

Every section module (`dataflow`, `controlflow`, `topology`, `faulttrees`, `observability`,
`loadtest`) builds on these; `archkit.spec.model` assembles the sections into the `Spec` root.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = [
    "BatchSize",
    "Fraction",
    "Id",
    "Instances",
    "MAX_BATCH",
    "MAX_INSTANCES",
    "MAX_ITEMS",
    "MAX_LEVEL_SECONDS",
    "MAX_MS",
    "MAX_REPLICAS",
    "MAX_RPS",
    "MAX_SECONDS",
    "MAX_WORKERS",
    "Ms",
    "Node",
    "PortNumber",
    "PositiveInt",
    "Replicas",
    "Rps",
    "Seconds",
    "assign_paths",
    "copy_paths",
    "walk",
]

Id = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$",
        min_length=1,
        max_length=128,
        description="identifier: letters, digits, '_', '-', '.'",
    ),
]
# Bounds on numbers: each says the largest value that still means something for one online AI
# service, so that a typo (or a fuzzer's 10^9) is a located schema error instead of an analysis
# that runs for hours. The loader refuses numbers over 50 characters and NaN/inf before this.
MAX_MS = 86_400_000  # a day: a latency, timeout or backoff longer than that is not a latency
MAX_RPS = 10_000_000.0  # 10 M req/s, above the front door of the largest public services
MAX_REPLICAS = 5_000  # one replica per node of Kubernetes' largest tested cluster (5,000 nodes)
MAX_INSTANCES = 128  # Triton instance_group count per server: 8 GPUs x 16 already only contend
MAX_BATCH = 1_024  # dynamic batches beyond ~1k items exceed GPU memory for vision/language models
MAX_WORKERS = 1_024  # workers (threads, processes) of one replica of a non-model stage
MAX_ITEMS = 10_000  # items one request fans out to (line crops, candidates to rank)
MAX_SECONDS = 86_400.0  # periods, windows and durations in seconds: a day
# A load-test level may run a week: seed 000 §2.2 soaks each static-layer update for 72 hours.
MAX_LEVEL_SECONDS = 7 * 86_400.0
Ms = Annotated[float, Field(ge=0, le=MAX_MS, description="milliseconds, at most a day (86,400,000)")]
Fraction = Annotated[float, Field(ge=0, le=1)]
PositiveInt = Annotated[int, Field(ge=1)]
Rps = Annotated[float, Field(ge=0, le=MAX_RPS, description="requests per second, at most 10,000,000")]
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, description="seconds, at most a day (86,400)")]
PortNumber = Annotated[int, Field(ge=1, le=65535, description="a TCP/UDP port")]
Replicas = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_REPLICAS,
        description="at most 5,000 (Kubernetes' largest tested cluster has 5,000 nodes)",
    ),
]
Instances = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_INSTANCES,
        description="model instances per server (Triton instance_group count), at most 128: "
        "8 GPUs x 16 instances already only contend",
    ),
]
BatchSize = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_BATCH,
        description="at most 1,024 items: larger dynamic batches exceed GPU memory for vision and "
        "language models (seed 000 §2.1 measures 1 to 8)",
    ),
]


class Node(BaseModel):
    """Base of every spec object: strict keys, and a record of where in the file it came from."""

    # allow_inf_nan=False: `.inf`/`.nan` are YAML floats, but no field of a spec means them
    # (a `timeout_ms: .inf` once reached a locustfile as the undefined name `inf`)
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        frozen=False,
        use_enum_values=False,
        validate_default=True,
        allow_inf_nan=False,
    )
    _path: tuple[Any, ...] = PrivateAttr(default=())

    @property
    def spec_path(self) -> tuple[Any, ...]:
        """The path of this object in the document, e.g. ('dataflow', 'stages', 2)."""
        return self._path


def copy_paths(src: Node, dst: Node) -> None:
    """Keep source locations on a deep copy (private attrs are copied, but be explicit)."""
    for a, b in zip(walk(src), walk(dst), strict=False):
        b._path = a._path


def walk(node: Any, path: tuple[Any, ...] = ()) -> Iterator[Node]:
    """Every Node in the tree, depth first, in document order."""
    if isinstance(node, Node):
        yield node
        for name in type(node).model_fields:
            yield from walk(getattr(node, name), path)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item, path)
    elif isinstance(node, dict):
        for item in node.values():
            yield from walk(item, path)


def assign_paths(node: Any, path: tuple[Any, ...] = ()) -> None:
    """Record each object's document path (aliases, e.g. `from`, are used as keys)."""
    if isinstance(node, Node):
        node._path = path
        for name, finfo in type(node).model_fields.items():
            key = finfo.alias or name
            assign_paths(getattr(node, name), path + (key,))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            assign_paths(item, path + (i,))
    elif isinstance(node, dict):
        for k, item in node.items():
            assign_paths(item, path + (k,))
