"""The data-flow section: stages (what each does, its model, batching, caching) and the edges between them."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from archkit.spec.base import (
    MAX_BATCH,
    MAX_ITEMS,
    MAX_MS,
    MAX_WORKERS,
    BatchSize,
    Fraction,
    Id,
    Instances,
    Ms,
    Node,
    Seconds,
)
from archkit.spec.fanout import Fanout
from archkit.spec.governance import ConfidenceBreaker, Consent
from archkit.spec.keys import KeyCustody
from archkit.spec.model_contract import ModelContract
from archkit.spec.refs import IdOf, RefTo
from archkit.spec.serving import TritonBackend

if TYPE_CHECKING:  # the llm section builds on this one; archkit.spec.model completes `Stage`
    from archkit.spec.llm import LlmStage


__all__ = [
    "BatchTiming",
    "Batching",
    "CacheSettings",
    "Dataflow",
    "Device",
    "Edge",
    "Encryption",
    "ModelFormat",
    "ModelInfo",
    "Plane",
    "Quantization",
    "RollbackVerification",
    "Stage",
    "StageKind",
    "Transport",
    "VersionPolicy",
]


class StageKind(str, Enum):
    ingress = "ingress"
    gateway = "gateway"
    preprocess = "preprocess"
    model = "model"
    postprocess = "postprocess"
    store = "store"
    cache = "cache"
    external = "external"
    queue = "queue"
    rules = "rules"
    human = "human"
    llm = "llm"


class Plane(str, Enum):
    """Seed 004 §2.2: data, control and policy planes."""

    data = "data"
    control = "control"
    policy = "policy"


class Device(str, Enum):
    cpu = "cpu"
    gpu = "gpu"


class ModelFormat(str, Enum):
    onnx = "onnx"
    torchscript = "torchscript"
    tensorrt = "tensorrt"
    savedmodel = "savedmodel"
    python = "python"
    pickle = "pickle"
    xgboost = "xgboost"
    other = "other"


class BatchTiming(Node):
    """Measured or estimated service time of ONE batch of `batch_size` items (seed 000 §2.1)."""

    batch_size: BatchSize
    copy_ms: Ms = Field(0.0, description="host→device copy time of the whole batch")
    compute_ms: Ms = Field(description="compute time of the whole batch")
    overhead_ms: Ms = Field(0.0, description="fixed pre/post work per batch")
    measured: bool = Field(True, description="false when the figure is an estimate")

    @property
    def total_ms(self) -> float:
        return self.copy_ms + self.compute_ms + self.overhead_ms


class Batching(Node):
    """Dynamic batching as Triton configures it."""

    max_batch_size: BatchSize
    preferred_batch_sizes: list[BatchSize] = Field(default_factory=list, max_length=64)
    max_queue_delay_us: Annotated[int, Field(ge=0, le=60_000_000)] = Field(
        0, description="at most a minute (60,000,000 us): seed 000 §2.1 uses 1,000 us (1 ms)"
    )
    max_queue_size: Annotated[int, Field(ge=0, le=1_000_000)] | None = Field(
        None, description="bounded queue: requests beyond it are refused; at most 1,000,000"
    )
    queue_timeout_us: Annotated[int, Field(ge=0, le=MAX_MS * 1000)] | None = Field(
        None, description="at most a day in microseconds"
    )


class VersionPolicy(Node):
    """Which model versions the server keeps loaded (seed 000 §2.2: latest 2)."""

    latest_num_versions: Annotated[int, Field(ge=1, le=100)] | None = None
    specific: list[int] = Field(default_factory=list)


class RollbackVerification(Node):
    """How a rollback is proven (seed 000 §5.12)."""

    golden_set: str | None = Field(None, description="path of inputs with known outputs")
    command: str | None = None
    expect: str | None = None
    max_s: Seconds | None = Field(
        None, description="a rollback takes effect within this many seconds (seed 000 §2.2: 5 s; AK329)"
    )


class Quantization(Node):
    mode: Literal["none", "dynamic", "static", "fp16", "int8"] = "none"
    layers: list[str] = Field(default_factory=list)
    accuracy_drop: Fraction | None = Field(None, description="measured accuracy lost to quantisation (AK612)")
    max_accuracy_drop: Fraction | None = Field(
        None, description="the most accuracy the design accepts to lose (seed 000 §5.10: YOLOv5 lost 3.2 %)"
    )


class ModelInfo(Node):
    """A model served by a stage: identity, batching and measured timings."""

    name: str
    version: str | None = None
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    artifact: str | None = Field(
        None,
        max_length=2048,
        description="where the version's files live, a path naming the version, e.g. "
        "s3://models/ocr/v1.2.0/model.onnx (seed 004 §4.1; AK328)",
    )
    format: ModelFormat = ModelFormat.onnx
    server: str | None = Field(None, description="serving runtime, e.g. triton")
    backend: TritonBackend | None = Field(
        None,
        description="Triton backend that runs the files where it is not the format's default (onnx: onnxruntime), "
        "e.g. python for ONNX served by OpenVINO from model.py (archkit.spec.serving; AK398, VT239)",
    )
    device: Device = Device.gpu
    instances: Instances = 1
    # at most a batch: Triton refuses a request larger than max_batch_size, and the simulation's
    # batch tables are as long as the batch in items (issue 28: 1,000,000 made 2 M-entry tables)
    items_per_call: Annotated[int, Field(ge=1, le=MAX_BATCH)] = Field(
        1,
        description="items each inference request carries (a client that sends line crops in pairs: 2), "
        f"at most {MAX_BATCH:,}; the batcher never splits a request",
    )
    batching: Batching | None = None
    service_time: list[BatchTiming] = Field(default_factory=list)
    reload_ms: Ms | None = Field(None, description="model reload / CUDA context rebuild time")
    cold_start_ms: Ms | None = None
    gpu_memory_gb: Annotated[float, Field(ge=0, le=4096)] | None = None
    version_policy: VersionPolicy | None = None
    rollback: RollbackVerification | None = None
    quantization: Quantization | None = None
    opset: Annotated[int, Field(ge=1, le=1000)] | None = None
    contract: ModelContract | None = Field(
        None, description="output fields per version (archkit.spec.model_contract)"
    )
    confidence_breaker: ConfidenceBreaker | None = Field(
        None, description="move traffic to a backup model when mean confidence falls (seed 004 §3.2)"
    )


class Encryption(Node):
    at_rest: bool = False
    in_transit: bool = False
    algorithm: str | None = None
    kms_key_rotation_days: Annotated[int, Field(ge=1, le=36_500)] | None = None
    key_custody: KeyCustody | None = Field(
        None,
        description="who holds the key; overrides policies.security.key_custody (seed 000 §2.4: "
        "keys in a KMS; rule AK514)",
    )


class CacheSettings(Node):
    """A cache of deterministic intermediates (seed 004 §3.3: cache OCR text, not final answers)."""

    key: str = Field(description="what the entry is keyed by, e.g. sha256(image)")
    backend: Literal["memory", "redis", "memcached", "other"] = "memory"
    ttl_s: Annotated[float, Field(gt=0, le=10 * 365 * 86_400)] | None = None
    max_entries: Annotated[int, Field(ge=1, le=10**12)] | None = None
    hit_p99_ms: Ms | None = Field(None, description="latency of a hit")
    hit_ratio: Fraction | None = Field(
        None,
        description="share of lookups that hit (e.g. the load test's share of repeated uploads); with "
        "`skips`, `archkit capacity` mixes the hit and miss latencies (seed 004 §3.3, `archkit.perf.cache`)",
    )
    skips: list[Annotated[Id, RefTo("stage")]] = Field(
        default_factory=list,
        max_length=100,
        description="the stages a hit makes unnecessary, in order (seed 004 §3.3: the OCR inference)",
    )


class Stage(Node):
    """One step of the data flow with its latency budget, volume and failure rate."""

    id: Annotated[Id, IdOf("stage")]
    name: str | None = None
    kind: StageKind
    plane: Plane = Plane.data
    service: Annotated[Id, RefTo("service")] | None = Field(
        None, description="topology service that runs this stage"
    )
    description: str | None = None
    p50_ms: Ms | None = None
    p95_ms: Ms | None = None
    p99_ms: Ms | None = None
    timeout_ms: Ms | None = None
    gb_per_hour: Annotated[float, Field(ge=0, le=10**9)] | None = None
    failure_rate: Fraction | None = None
    failure_cause: str | None = None
    owner: str | None = Field(
        None, max_length=256, description="who owns this stage (default: its service's)"
    )
    consent: Consent | None = Field(None, description="how the people whose data it captures agreed (AK511)")
    phase: Literal["mva", "later"] | None = Field(
        None, description="mva: part of the minimum viable architecture (seed 004 §4.5; AK116)"
    )
    device: Device | None = Field(
        None,
        description="where a non-model stage's own work runs; gpu (seed 000 §2.1's resize and normalise "
        "on the GPU, 15 → 3 ms) needs its service's pool to have GPUs (AK302); a model's is model.device",
    )
    max_input_bytes: Annotated[int, Field(ge=1, le=2**40)] | None = Field(
        None, description="largest input this stage accepts; larger is refused (seed 004 §2.1; AK216)"
    )
    concurrency: Annotated[int, Field(ge=1, le=MAX_WORKERS)] | None = Field(
        None, description="parallel workers per replica for non-model stages, at most 1,024"
    )
    items_per_request: Annotated[float, Field(gt=0, le=MAX_ITEMS)] = Field(
        1.0,
        description="items this stage handles per end-to-end request (e.g. 8 line crops per "
        "page); its arrival rate is this times the request rate; at most 10,000",
    )
    fanout: Fanout | None = Field(
        None,
        description="the items and calls of each visit as a measured distribution (archkit.spec.fanout): "
        "the simulation draws them per visit; its mean items equal items_per_request (AK118)",
    )
    cpu_ms: Ms | None = Field(
        None,
        description="processor time one item of a non-model stage takes on its service's cores (median); "
        "unset: its latency is waiting (I/O, a remote call), not work on shared cores",
    )
    cpu_p99_ms: Ms | None = Field(
        None,
        description="the 99th percentile of that processor time: with cpu_ms, the log-normal's spread "
        "(archkit calibrate measures it); unset: the spread of the stage's P50 -> P99 budgets",
    )
    service_distribution: Literal["lognormal", "exponential", "deterministic"] = Field(
        "lognormal",
        description="shape of a non-model stage's service time around its median (cpu_ms, else p50_ms): "
        "lognormal spreads it to the stage's p99_ms",
    )
    data_classes: list[str] = Field(
        default_factory=list, description="e.g. pii, biometric, credentials, raw_image"
    )
    compliance: list[str] = Field(default_factory=list, description="e.g. 'GDPR Art.9'")
    encryption: Encryption | None = None
    egress: bool = Field(False, description="data leaves the trust boundary from here")
    logs_payload: bool = Field(False, description="raw payloads are written to logs")
    model: ModelInfo | None = None
    llm: LlmStage | None = Field(None, description="an LLM served by a continuous-batching engine (kind llm)")
    cache: CacheSettings | None = None
    budget_alert: Literal["ticket", "page"] = Field(
        "ticket",
        description="severity of this stage's latency and failure-rate budget alerts: a ticket by "
        "default (pages are for SLO burn, effective-QPS collapse and service down)",
    )


class Transport(str, Enum):
    http = "http"
    grpc = "grpc"
    kafka = "kafka"
    queue = "queue"
    shm = "shm"
    inproc = "inproc"
    s3 = "s3"
    redis = "redis"
    sql = "sql"


class Edge(Node):
    """Data moving from one stage to another."""

    from_: Annotated[Id, RefTo("stage")] = Field(alias="from")
    to: Annotated[Id, RefTo("stage")]
    payload: str | None = None
    bytes: Annotated[int, Field(ge=0, le=2**40)] | None = Field(
        None, description="mean payload size, at most 1 TiB"
    )
    transport: Transport = Transport.http
    mode: Literal["sync", "async"] = "sync"
    p50_ms: Ms | None = Field(None, description="transfer time, if significant")
    p99_ms: Ms | None = None
    label: str | None = None
    condition: str | None = Field(None, description="taken only when this holds (branch)")
    weight: Fraction | None = Field(
        None,
        description="share of the source stage's traffic that takes this edge (a cache miss ratio, a "
        "fallback share); unset: all of it (conservative)",
    )
    decision: Annotated[Id, RefTo("control-flow node")] | None = Field(
        None,
        description="the control-flow decision that picks this edge: edges from one stage naming the same "
        "decision are exclusive alternatives (each request takes one), their weights its branch shares "
        "(seed 004 §2.1's precise or fast OCR; AK298)",
    )


class Dataflow(Node):
    """Stages and the edges between them."""

    stages: list[Stage] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)
