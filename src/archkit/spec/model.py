"""The archkit/v1 spec model: one AI service's data flow, control flow, topology and faults.

Conventions (see docs/spec.md):
- every number carries its unit in the key name (`p99_ms`, `gb_per_hour`, `max_queue_delay_us`);
- every entity that others refer to has an `id`; references are plain ids and are resolved
  by the structural checks (AK1xx), not here, so that all dangling references are reported
  together with their source lines;
- unknown keys are errors (`extra="forbid"`), with a "did you mean" suggestion from the loader.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from archkit.spec.refs import IdOf, RefTo, refs_of

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


# --------------------------------------------------------------------------- metadata/budgets


class Metadata(Node):
    """Who owns the service and where its dashboards and code live."""

    name: Id
    title: str | None = None
    description: str | None = None
    owners: list[str] = Field(default_factory=list, description="team or person contacts")
    links: dict[str, str] = Field(
        default_factory=dict, description="named links: dashboard, repo, runbook_base_url, ..."
    )
    labels: dict[str, str] = Field(default_factory=dict)


class Budgets(Node):
    """End-to-end objectives the whole request path must meet."""

    p50_ms: Ms | None = None
    p95_ms: Ms | None = None
    p99_ms: Ms | None = None
    throughput_rps: Rps | None = Field(None, description="design request rate the service must sustain")
    peak_throughput_rps: Rps | None = None
    error_rate: Fraction | None = Field(None, description="max fraction of failed requests")
    availability: Annotated[float, Field(gt=0, lt=1)] | None = Field(
        None, description="availability objective, e.g. 0.999"
    )
    slo_window_days: Annotated[int, Field(ge=1, le=366)] = 30
    failure_rate_threshold: Fraction = Field(
        0.01, description="stages whose failure_rate exceeds this are drawn as failure-prone"
    )


# --------------------------------------------------------------------------- data flow


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
    format: ModelFormat = ModelFormat.onnx
    server: str | None = Field(None, description="serving runtime, e.g. triton")
    device: Device = Device.gpu
    instances: Instances = 1
    items_per_call: PositiveInt = Field(
        1,
        description="items each inference request carries (a client that sends line crops in pairs: 2); "
        "the batcher never splits a request",
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


class Encryption(Node):
    at_rest: bool = False
    in_transit: bool = False
    algorithm: str | None = None
    kms_key_rotation_days: Annotated[int, Field(ge=1, le=36_500)] | None = None


class CacheSettings(Node):
    """A cache of deterministic intermediates (seed 004 §3.3: cache OCR text, not final answers)."""

    key: str = Field(description="what the entry is keyed by, e.g. sha256(image)")
    backend: Literal["memory", "redis", "memcached", "other"] = "memory"
    ttl_s: Annotated[float, Field(gt=0, le=10 * 365 * 86_400)] | None = None
    max_entries: Annotated[int, Field(ge=1, le=10**12)] | None = None
    hit_p99_ms: Ms | None = Field(None, description="latency of a hit")


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
    concurrency: Annotated[int, Field(ge=1, le=MAX_WORKERS)] | None = Field(
        None, description="parallel workers per replica for non-model stages, at most 1,024"
    )
    items_per_request: Annotated[float, Field(gt=0, le=MAX_ITEMS)] = Field(
        1.0,
        description="items this stage handles per end-to-end request (e.g. 8 line crops per "
        "page); its arrival rate is this times the request rate; at most 10,000",
    )
    cpu_ms: Ms | None = Field(
        None,
        description="processor time one item of a non-model stage takes on its service's cores (median); "
        "unset: its latency is waiting (I/O, a remote call), not work on shared cores",
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


class Dataflow(Node):
    """Stages and the edges between them."""

    stages: list[Stage] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)


# --------------------------------------------------------------------------- control flow


class Branch(Node):
    when: str = Field(description="the branch condition's outcome, e.g. 'yes', 'fresh'")
    next: Annotated[Id, RefTo("control-flow node")]


class Decision(Node):
    """A diamond: criterion, where its data comes from, branches and the failure path."""

    id: Annotated[Id, IdOf("control-flow node")]
    label: str | None = None
    criterion: str | None = Field(None, description="e.g. 'feature age < 300s'")
    source: str | None = Field(None, description="where the data for the decision comes from")
    timeout_ms: Ms | None = None
    branches: list[Branch] = Field(default_factory=list)
    on_failure: Annotated[Id, RefTo("control-flow node")] | None = Field(
        None, description="node taken when the decision cannot be made"
    )


class Retry(Node):
    attempts: Annotated[int, Field(ge=0, le=100)] = Field(description="retries after the first try")
    backoff_ms: Ms = 0.0
    backoff_multiplier: Annotated[float, Field(ge=1, le=10)] = Field(
        1.0, description="at most 10 (gRPC's default is 1.6, most clients double)"
    )
    jitter: bool = False


class CircuitBreaker(Node):
    error_rate_threshold: Fraction = 0.5
    window_s: Seconds = 10.0
    open_s: Seconds = 30.0
    min_requests: Annotated[int, Field(ge=1, le=1_000_000)] = 20


class Call(Node):
    """A call to a stage or service with its timeout, retries, breaker and fallback."""

    id: Annotated[Id, IdOf("control-flow node", also=("call",))]
    label: str | None = None
    target: Annotated[Id, RefTo("stage", "service")] = Field(
        description="a dataflow stage id or a topology service id"
    )
    timeout_ms: Ms | None = None
    retry: Retry | None = None
    circuit_breaker: CircuitBreaker | None = None
    caller: Annotated[Id, RefTo("call")] | None = Field(
        None, description="the call whose target makes this call (nesting)"
    )
    next: Annotated[Id, RefTo("control-flow node")] | None = None
    on_failure: Annotated[Id, RefTo("control-flow node")] | None = Field(
        None, description="fallback node on error or timeout"
    )
    idempotent: bool = True


class Terminal(Node):
    """Where a request ends."""

    id: Annotated[Id, IdOf("control-flow node")]
    label: str | None = None
    outcome: Literal["success", "degraded", "rejected", "error"] = "success"
    status: Annotated[int, Field(ge=0, le=999)] | None = Field(
        None, description="protocol status returned, e.g. 200, 429 (HTTP) or 14 (gRPC)"
    )


class Controlflow(Node):
    """Who decides what, when: decisions, calls and terminals."""

    start: Annotated[Id, RefTo("control-flow node")] | None = None
    timeout_ms: Ms | None = Field(None, description="overall request deadline")
    decisions: list[Decision] = Field(default_factory=list)
    calls: list[Call] = Field(default_factory=list)
    terminals: list[Terminal] = Field(default_factory=list)

    def nodes(self) -> Iterator[Decision | Call | Terminal]:
        yield from self.decisions
        yield from self.calls
        yield from self.terminals


# --------------------------------------------------------------------------- topology


class GpuSharing(str, Enum):
    exclusive = "exclusive"
    mig = "mig"
    time_slicing = "time_slicing"
    memory_fraction = "memory_fraction"


class Gpu(Node):
    model: str
    count: Annotated[int, Field(ge=1, le=16)] = Field(1, description="GPUs per node, at most 16")
    memory_gb: Annotated[float, Field(gt=0, le=4096)] | None = None
    mig_profile: str | None = None
    sharing: GpuSharing = GpuSharing.exclusive
    memory_fraction: Annotated[float, Field(gt=0, le=1)] | None = None


class Taint(Node):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


class NodePool(Node):
    """A group of identical nodes."""

    id: Annotated[Id, IdOf("node pool")]
    role: Literal["inference", "training", "preprocess", "general", "storage", "system"] = "general"
    instance_type: str | None = None
    count: Replicas = 1
    cpu_cores: Annotated[float, Field(gt=0, le=4096)] | None = None
    memory_gib: Annotated[float, Field(gt=0, le=65_536)] | None = None
    gpu: Gpu | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    networks: list[Annotated[Id, RefTo("network")]] = Field(default_factory=list)
    multi_tenant: bool = False


class Network(Node):
    """A network plane (business, RDMA, management, ...)."""

    id: Annotated[Id, IdOf("network")]
    kind: Literal["business", "rdma", "management", "storage", "public"] = "business"
    cidr: str
    mtu: Annotated[int, Field(ge=576, le=65535)] = 1500
    public: bool = False


class Storage(Node):
    id: Annotated[Id, IdOf("storage")]
    type: Literal["nfs", "cephfs", "tmpfs", "s3", "local", "hostpath", "pvc", "emptydir", "redis", "database"]
    source: str | None = Field(None, description="server:/export, bucket, claim name, ...")
    mount_options: list[str] = Field(default_factory=list)
    encrypted: bool = False
    size_gib: Annotated[float, Field(gt=0, le=10**9)] | None = None
    data_classes: list[str] = Field(default_factory=list)


class ResourceAmounts(Node):
    cpu_cores: Annotated[float, Field(ge=0, le=4096)] | None = None
    memory_mib: Annotated[float, Field(ge=0, le=64 * 1024 * 1024)] | None = None
    gpu: Annotated[float, Field(ge=0, le=16)] | None = Field(None, description="nvidia.com/gpu, at most 16")


class Resources(Node):
    requests: ResourceAmounts = Field(default_factory=ResourceAmounts)
    limits: ResourceAmounts = Field(default_factory=ResourceAmounts)


class Port(Node):
    name: str
    port: PortNumber
    protocol: Literal["TCP", "UDP"] = "TCP"
    purpose: Literal["http", "grpc", "metrics", "admin", "other"] = "http"


class Probe(Node):
    """An HTTP, TCP or exec probe."""

    http_path: str | None = None
    port: PortNumber | None = None
    exec: list[str] | None = None
    tcp_port: PortNumber | None = None
    period_s: Seconds = 10
    timeout_s: Seconds = 1
    failure_threshold: Annotated[int, Field(ge=1, le=1000)] = 3
    initial_delay_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)] = 0


class Probes(Node):
    liveness: Probe | None = None
    readiness: Probe | None = None
    startup: Probe | None = None


class Security(Node):
    run_as_user: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = Field(
        None, description="a Linux uid (Kubernetes accepts 0 to 2147483647)"
    )
    run_as_non_root: bool | None = None
    read_only_root_fs: bool = False
    privileged: bool = False


class Mount(Node):
    storage: Annotated[Id, RefTo("storage")]
    path: str
    read_only: bool = False


class IngressRule(Node):
    """Who may connect to this service."""

    from_: str = Field(alias="from", description="a CIDR, 'service:<id>' or 'public'")
    ports: list[PortNumber] = Field(default_factory=list)
    auth: Literal["none", "jwt", "mtls", "api_key", "oauth2"] = "none"


class EgressRule(Node):
    to: str = Field(description="a CIDR, host name or 'service:<id>'")
    ports: list[PortNumber] = Field(default_factory=list)


class KubeRef(Node):
    """How the service appears in Kubernetes, for `archkit verify`."""

    kind: Literal["Deployment", "StatefulSet", "DaemonSet"] = "Deployment"
    name: str | None = None
    namespace: str = "default"
    container: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class Admission(Node):
    """How many requests a service admits at once and what each may hold in memory.

    With these numbers rule AK320 checks that the worst case fits the container's memory limit:
    `base_memory_mib + min(max_inflight × request_memory_mib, memory_budget_mib)`.
    """

    max_inflight: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        description="requests admitted at once; beyond it the service answers 429"
    )
    request_memory_mib: Annotated[float, Field(gt=0, le=1_048_576)] = Field(
        description="worst-case memory one admitted request holds (e.g. a decoded page at the pixel cap)"
    )
    base_memory_mib: Annotated[float, Field(ge=0, le=1_048_576)] = Field(
        0, description="resident memory of the idle process"
    )
    memory_budget_mib: Annotated[float, Field(gt=0, le=1_048_576)] | None = Field(
        None, description="the service's own cap on memory held by requests at once (e.g. a decode budget)"
    )


class Service(Node):
    """A deployable unit placed on a node pool."""

    id: Annotated[Id, IdOf("service")]
    image: str | None = None
    pool: Annotated[Id, RefTo("node pool")]
    replicas: Replicas = 1
    min_replicas: Replicas | None = None
    max_replicas: Replicas | None = None
    resources: Resources = Field(default_factory=Resources)
    routing: Literal["random", "round-robin", "least-request"] = Field(
        "random",
        description="how callers spread requests over the replicas; a Kubernetes Service (kube-proxy) is random",
    )
    ports: list[Port] = Field(default_factory=list)
    probes: Probes = Field(default_factory=Probes)
    security: Security = Field(default_factory=Security)
    mounts: list[Mount] = Field(default_factory=list)
    ingress: list[IngressRule] = Field(default_factory=list)
    egress: list[EgressRule] = Field(default_factory=list)
    ulimits: dict[str, int] = Field(default_factory=dict, description="e.g. nofile: 65536")
    sysctls: dict[str, str | int] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    public: bool = Field(False, description="reachable from outside the cluster")
    external: bool = Field(False, description="a third-party dependency not deployed by us")
    kubernetes: KubeRef | None = None
    log_keywords: list[str] = Field(default_factory=list)
    admission: Admission | None = Field(
        None, description="in-flight limit and memory per request (checked against limits.memory_mib)"
    )
    deploy_command: str | None = None
    rollback_command: str | None = None
    runtime: Runtime | None = Field(
        None, description="Python/framework/CUDA/driver versions (archkit.spec.runtime)"
    )


class OsTuning(Node):
    sysctls: dict[str, str | int] = Field(default_factory=dict)
    ntp: bool | None = None
    max_clock_drift_ms: Ms | None = None
    swappiness: Annotated[int, Field(ge=0, le=200)] | None = Field(
        None, description="vm.swappiness, 0 to 200"
    )
    resolver_options: list[str] | None = Field(
        None,
        description="resolv.conf `options` (seed 000 §5.7: timeout:1 attempts:2 rotate), checked by AK323",
    )


class Topology(Node):
    """Node pools, networks, storage and services."""

    node_pools: list[NodePool] = Field(default_factory=list)
    networks: list[Network] = Field(default_factory=list)
    storage: list[Storage] = Field(default_factory=list)
    services: list[Service] = Field(default_factory=list)
    os_tuning: OsTuning | None = None


# --------------------------------------------------------------------------- fault trees


class GateType(str, Enum):
    """Open-PSA MEF's Boolean connectives, plus `inhibit` (an AND with a conditioning event)."""

    OR = "or"
    AND = "and"
    ATLEAST = "atleast"
    NOT = "not"
    XOR = "xor"
    NAND = "nand"
    NOR = "nor"
    IFF = "iff"
    IMPLY = "imply"
    INHIBIT = "inhibit"


class Gate(Node):
    id: Annotated[Id, IdOf("gate or event", scope="fault tree")]
    label: str | None = None
    type: GateType
    k: PositiveInt | None = Field(None, description="for atleast: how many inputs must fail")
    inputs: list[Annotated[Id, RefTo("gate or event")]] = Field(min_length=1)
    condition: Annotated[Id, RefTo("gate or event")] | None = Field(
        None, description="for inhibit: the conditioning event (basic or house) that must also hold"
    )


class HouseEvent(Node):
    """An event that is certainly true or false (a switch), e.g. 'maintenance in progress'."""

    id: Annotated[Id, IdOf("gate or event", scope="fault tree")]
    label: str | None = None
    state: bool = Field(False, description="true or false; `archkit faulttree --house ID=true` overrides it")


class CcfModel(str, Enum):
    BETA_FACTOR = "beta-factor"
    ALPHA_FACTOR = "alpha-factor"
    MGL = "mgl"


class CcfGroup(Node):
    """Common-cause failure group: members fail independently or together (NUREG/CR-5485 models).

    beta-factor: `factors: [beta]`; alpha-factor: `factors: [a1, ..., am]`; MGL:
    `factors: [beta, gamma, ...]` (m - 1 values). The members' total failure probability
    is `probability`, or each member's own when they agree.
    """

    id: Annotated[Id, IdOf("CCF group", scope="fault tree")]
    members: list[Annotated[Id, RefTo("basic event")]] = Field(min_length=2)
    model: CcfModel = CcfModel.BETA_FACTOR
    probability: Fraction | None = None
    factors: list[Fraction] = Field(min_length=1)


class FaultTreeLimits(Node):
    """Bounds on the analysis, so that a huge tree is a finding instead of a hang."""

    # Budgets of work, not of wall-clock time, so that results stay byte-identical on any
    # machine. The defaults keep `archkit check` within ~2 s and ~512 MiB on this project's
    # 2-core EPYC (docs/benchmarks.md, issue 28); the maxima bound what a spec can ask for (issue 28:
    # a spec raised them to 10^15). das9701, the largest Aralia tree, needs 14.1M BDD nodes
    # (7 s, 465 MiB): it sets its own limits. The compiled kernel holds ~30 bytes a live node.
    max_bdd_nodes: Annotated[int, Field(ge=1, le=64_000_000)] = Field(
        4_000_000,
        description="BDD nodes made: the probability's work (~0.5 s a million; at most 64,000,000)",
    )
    # counted with the minimal-solutions steps: a Python pass takes ~2 s and ~130 MB a million
    # (das9701's stopped at 4M after 8 s, 530 MB); a compiled one far less (`ft_kernel`)
    max_zbdd_nodes: Annotated[int, Field(ge=1, le=16_000_000)] = Field(
        1_000_000,
        description="cut-set ZBDD nodes and minimal-solution steps: the cut sets' work "
        "(up to ~2 s a million; at most 16,000,000)",
    )
    # listing is ~11 s and ~1 GB a million sets (an AND of 10 ORs of 4 events: 1,048,576 sets);
    # the counts by order and the probability are exact whatever is listed
    max_cut_sets: Annotated[int, Field(ge=1, le=2_000_000)] = Field(
        10_000, description="minimal cut sets listed (counts are exact; ~11 s a million; at most 2,000,000)"
    )
    max_order: PositiveInt | None = Field(None, description="drop cut sets with more events")
    cutoff: Fraction | None = Field(None, description="drop cut sets less probable than this")


class BasicEvent(Node):
    """A leaf: how to check it, what healthy output looks like, and how to fix it.

    The check's output is compared with `expect` (substring), `expect_regex` or
    `expect_exit_code`; a mismatch confirms the event (the fault is present).
    """

    id: Annotated[Id, IdOf("gate or event", scope="fault tree", also=("basic event",))]
    label: str | None = None
    check: str | None = Field(None, description="shell command, run exactly as written")
    expect: str | None = Field(None, description="substring present when healthy")
    expect_regex: str | None = None
    expect_exit_code: Annotated[int, Field(ge=0, le=255)] | None = None
    timeout_s: Annotated[float, Field(gt=0, le=600)] = 10
    cost_s: Annotated[float, Field(ge=0)] | None = Field(None, description="time a check takes a human")
    probability: Fraction | None = None
    rate_per_hour: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    test_interval_h: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="periodically tested: with rate_per_hour, unavailability since the last test"
    )
    first_test_h: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="time of the first test (default: test_interval_h)"
    )
    mismatch_means: str | None = None
    remedy: str | None = None


class FaultTree(Node):
    """Top event of one service, its gates and leaf events."""

    id: Annotated[Id, IdOf("fault tree")]
    service: Annotated[Id, RefTo("service")] | None = None
    top: Annotated[Id, RefTo("gate or event")] = Field(
        description="the gate (or event) that is the top event"
    )
    label: str | None = None
    mission_time_h: Annotated[float, Field(gt=0)] | None = Field(
        None, description="converts rate_per_hour into probability"
    )
    gates: list[Gate] = Field(default_factory=list)
    events: list[BasicEvent] = Field(default_factory=list)
    house_events: list[HouseEvent] = Field(default_factory=list)
    ccf_groups: list[CcfGroup] = Field(default_factory=list)
    limits: FaultTreeLimits = Field(default_factory=FaultTreeLimits)
    escalation: str | None = None


# --------------------------------------------------------------------------- observability


class MetricType(str, Enum):
    histogram = "histogram"
    summary = "summary"
    counter_us = "counter_us"  # Triton's cumulative *_duration_us counters
    counter = "counter"
    gauge = "gauge"


class MetricRef(Node):
    metric: str
    type: MetricType = MetricType.histogram
    count_metric: str | None = Field(None, description="request counter for counter_us ratios")
    labels: dict[str, str] = Field(default_factory=dict)
    buckets: list[Annotated[float, Field(gt=0, le=MAX_SECONDS * 1e6)]] | None = Field(
        None,
        max_length=200,
        description="a histogram's `le` boundaries, in the metric's unit (latency SLO thresholds are checked against them)",
    )


class StageMetrics(Node):
    """The series that measure one stage."""

    stage: Annotated[Id, RefTo("stage")]
    latency: MetricRef | None = None
    errors: MetricRef | None = None
    requests: MetricRef | None = None
    queue: MetricRef | None = None
    compute: MetricRef | None = None


class EffectiveQps(Node):
    """Seed 004 §3.4: successes with confidence >= floor, per second."""

    metric: str
    confidence_floor: Fraction = 0.8
    baseline_qps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    alert_below_ratio: Fraction = 0.5
    labels: dict[str, str] = Field(default_factory=dict)


class ColdStart(Node):
    metric: str
    max_ms: Ms = 800
    type: MetricType = MetricType.gauge
    labels: dict[str, str] = Field(default_factory=dict)


class Drift(Node):
    metric: str
    method: Literal["ks", "psi", "chi2"] = "ks"
    p_value_threshold: Fraction = 0.01
    labels: dict[str, str] = Field(default_factory=dict)


class GpuMemory(Node):
    metric: str
    total_metric: str | None = None
    max_ratio: Fraction = 0.9
    labels: dict[str, str] = Field(default_factory=dict)


class GoldenSignals(Node):
    effective_qps: EffectiveQps | None = None
    cold_start: ColdStart | None = None
    drift: Drift | None = None
    gpu_memory: GpuMemory | None = None
    memory_growth: MemoryGrowth | None = Field(
        None, description="memory slope of long-running servers (archkit.spec.signals)"
    )


class LogPolicy(Node):
    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] = "INFO"
    never_log: list[str] = Field(default_factory=list, description="fields that must never be logged")
    required_fields: list[str] = Field(default_factory=list)


class ScrapeTarget(Node):
    service: Annotated[Id, RefTo("service")]
    port: PortNumber
    path: str = "/metrics"
    job: str | None = None


class Observability(Node):
    stages: list[StageMetrics] = Field(default_factory=list)
    golden_signals: GoldenSignals = Field(default_factory=GoldenSignals)
    logging: LogPolicy | None = None
    scrape: list[ScrapeTarget] = Field(default_factory=list)
    clock_sync: bool | None = Field(None, description="hosts' clocks are synchronised (NTP/PTP)")
    max_clock_drift_ms: Ms | None = None
    alert_for: str = Field("5m", pattern=r"^[0-9]+[smhd]$", description="default 'for' of alerts")


# --------------------------------------------------------------------------- SLOs


class Matcher(Node):
    """One PromQL label matcher: `label op "value"` (=, !=, =~, !~; regexes are RE2, fully anchored)."""

    label: str
    op: Literal["=", "!=", "=~", "!~"] = "="
    value: str


class SloEvents(Node):
    """A counter of events selected by matchers (an SLI's good, bad or total events)."""

    metric: str
    matchers: list[Matcher] = Field(default_factory=list, max_length=32)


class Slo(Node):
    """A service level objective: availability (event ratio) or latency (share at or under a threshold).

    Availability: `bad`/`total` or `good`/`total` events; without them, the stage's `errors` and
    `requests` series from `observability`. Latency: the share of the stage's histogram at or
    under `threshold_ms` (its `_bucket` series, `le` = the threshold in the metric's unit).
    """

    name: Annotated[Id, IdOf("slo")]
    kind: Literal["availability", "latency"] = "availability"
    stage: Annotated[Id, RefTo("stage")] | None = Field(
        None, description="the stage whose series measure it (default: the first stage with series)"
    )
    objective: Annotated[float, Field(gt=0, lt=1)] = Field(description="target ratio, e.g. 0.999")
    window: str = Field("30d", pattern=r"^[1-9][0-9]{0,2}d$", description="rolling window in whole days")
    threshold_ms: Annotated[float, Field(gt=0, le=MAX_MS)] | None = Field(
        None, description="latency SLOs: requests at or under this many ms are good"
    )
    good: SloEvents | None = None
    bad: SloEvents | None = None
    total: SloEvents | None = None
    description: str | None = None

    @property
    def window_days(self) -> int:
        return int(self.window[:-1])


# --------------------------------------------------------------------------- policies


# A policy acts on, or sends traffic to, a stage, a control-flow node or a service.
_POLICY_TARGET = RefTo("stage", "control-flow node", "service", label="stage, control node or service")


class DegradeRule(Node):
    """Seed 004 §2.2 policy plane: condition → action."""

    id: Annotated[Id, IdOf("degrade rule")]
    condition: str
    action: Literal["route", "skip", "reject", "human_review", "cache_only", "default_response", "shed_load"]
    target: Annotated[Id, _POLICY_TARGET] | None = Field(
        None, description="stage, call, service or control node it acts on"
    )
    fallback: Annotated[Id, _POLICY_TARGET] | None = Field(None, description="where traffic goes instead")
    store: str | None = Field(None, description="where the rule lives, e.g. consul kv path")


class SecurityPolicy(Node):
    """Service-wide security settings."""

    kms_key_rotation_days: Annotated[int, Field(ge=1, le=36_500)] | None = None
    training_data_encrypted: bool | None = None


class Policies(Node):
    degrade: list[DegradeRule] = Field(default_factory=list)
    security: SecurityPolicy | None = None


# --------------------------------------------------------------------------- load test


class Target(Node):
    protocol: (
        Literal["http", "triton-http", "triton-grpc", "openai-stream"]
        | Annotated[str, Field(pattern=r"^x-[a-z0-9][a-z0-9-]*$")]
    ) = Field(
        "http",
        description="openai-stream: OpenAI-compatible completions streamed as server-sent events; "
        "x-NAME: a plug-in load protocol (entry point group archkit.load_protocols)",
    )
    host: str = Field(description="base URL; load tests only ever target loopback addresses")
    service: Annotated[Id, RefTo("service")] | None = None


class Payload(Node):
    file: str | None = None
    folder: str | None = None
    glob: str = "*"
    template: str | None = None
    content_type: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Payload:
        given = [k for k in ("file", "folder", "template") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"payload takes one of file, folder or template, not {', '.join(given)}")
        return self


class TritonInput(Node):
    name: str
    datatype: str = "BYTES"
    shape: list[Annotated[int, Field(ge=-1, le=2**31 - 1)]] = Field(
        default_factory=list, max_length=16, description="dimensions; -1 is variable"
    )


class Scenario(Node):
    """One kind of request in the traffic mix."""

    id: Annotated[Id, IdOf("load-test scenario")]
    weight: Annotated[float, Field(gt=0, le=1_000_000)] = 1
    method: Literal["GET", "POST", "PUT", "DELETE", "PATCH"] = "POST"
    path: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    payload: Payload | None = None
    model: str | None = Field(None, description="Triton model name for triton targets")
    inputs: list[TritonInput] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)
    expect_status: list[Annotated[int, Field(ge=100, le=599)]] = Field(
        default_factory=lambda: [200], description="HTTP status codes (RFC 9110: 100 to 599)"
    )
    llm_stage: Annotated[Id, RefTo("stage")] | None = Field(
        None,
        description="openai-stream: the llm stage whose workload (prompt and output lengths, shared "
        "prefixes) makes each request's body, and whose token budgets the run is judged by",
    )
    p50_ms: Ms | None = None
    p95_ms: Ms | None = None
    p99_ms: Ms | None = None


class Fault(Node):
    """One injected fault. loss and stress run in a cluster only (render's Chaos Mesh experiments)."""

    at_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)]
    action: Literal["stop", "kill", "restart", "pause", "delay", "loss", "stress"]
    target: Annotated[Id, RefTo("service")] = Field(description="a topology service id")
    duration_s: Annotated[float, Field(ge=0, le=MAX_SECONDS)] | None = None
    delay_ms: Ms | None = None
    loss_percent: Annotated[float, Field(gt=0, le=100)] | None = Field(
        None, description="loss: share of the target's outgoing packets dropped, in percent"
    )
    stress_cpu_workers: Annotated[int, Field(ge=1, le=1024)] | None = Field(
        None, description="stress: CPU-burning workers in the target's containers"
    )
    stress_memory_mib: Annotated[float, Field(gt=0, le=1_048_576)] | None = Field(
        None, description="stress: memory each stress worker holds, in MiB"
    )
    command: str | None = Field(None, description="how to apply it outside the local runner")
    expect_fallback: Annotated[Id, RefTo("control-flow node")] | None = Field(
        None, description="control-flow node expected to answer"
    )

    @model_validator(mode="after")
    def _amounts(self) -> Fault:
        if self.action == "loss" and self.loss_percent is None:
            raise ValueError("a loss fault needs loss_percent")
        if self.action == "stress" and self.stress_cpu_workers is None and self.stress_memory_mib is None:
            raise ValueError("a stress fault needs stress_cpu_workers or stress_memory_mib")
        return self


class StressSearch(Node):
    """A stress level that searches for the knee: rates start × factor^i until the stop criterion breaks."""

    # perf_analyzer's search (--request-rate-range with --latency-threshold): step the offered
    # rate up until the latency or the error share crosses its limit; a geometric step reaches
    # a knee ten times higher in a few more steps than a linear one.
    start_rps: Annotated[float, Field(gt=0, le=MAX_RPS)]
    factor: Annotated[float, Field(gt=1, le=10)] = Field(
        1.5, description="each step offers this many times the last"
    )
    max_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = Field(
        None, description="the highest rate tried (default: start × factor^9)"
    )
    stop_percentile: Literal["p50_ms", "p95_ms", "p99_ms"] = Field(
        "p99_ms",
        description="the latency percentile whose limit ends the search; each step lasts long enough to "
        "measure it (6, 72 or 368 samples at the step's rate, at least step_duration_s)",
    )
    stop_latency_ms: Ms | None = Field(None, description="its limit (default: the same budget in budgets)")
    stop_error_rate: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="the error share that ends the search (default: budgets.error_rate, else 1 %)"
    )


class Level(Node):
    """One load-test level: baseline, stress or chaos."""

    id: Annotated[Id, IdOf("load-test level")]
    kind: Literal["baseline", "stress", "chaos"]
    users: Annotated[int, Field(ge=1, le=100_000)] = Field(
        10, description="simulated users, at most 100,000 (locust runs a few thousand per core)"
    )
    rate_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    duration_s: Annotated[
        float,
        Field(
            gt=0, le=MAX_LEVEL_SECONDS, description="seconds, at most a week (604,800): a 72-hour soak fits"
        ),
    ] = 60
    max_requests: Annotated[int, Field(ge=1, le=10**9)] | None = None
    start_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    step_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    step_duration_s: Seconds | None = None
    max_rps: Annotated[float, Field(gt=0, le=MAX_RPS)] | None = None
    arrival: Literal["constant", "poisson", "closed"] | None = Field(
        None,
        description="open model (constant or poisson arrivals at the offered rate, the default for "
        "baseline and stress) or closed (users wait for each answer; the default for chaos)",
    )
    max_inflight: PositiveInt | None = Field(
        None,
        description="open model: requests in flight at most (default: users); beyond it a request is dropped",
    )
    faults: list[Fault] = Field(default_factory=list)
    search: StressSearch | None = Field(
        None, description="stress: search for the knee instead of the linear start_rps/step_rps schedule"
    )


class Loadtest(Node):
    target: Target
    scenarios: list[Scenario] = Field(default_factory=list)
    levels: list[Level] = Field(default_factory=list)


# --------------------------------------------------------------------------- environments


class StageOverride(Node):
    stage: Annotated[Id, RefTo("stage")]
    p50_ms: Ms | None = None
    p95_ms: Ms | None = None
    p99_ms: Ms | None = None
    service_time: list[BatchTiming] | None = None
    batching: Batching | None = Field(
        None,
        description="the model's batching on this hardware (replaces the stage's; checked by verify --env)",
    )
    instances: Instances | None = Field(None, description="the model's instance count on this hardware")
    cpu_ms: Ms | None = Field(
        None,
        description="a non-model stage's processor time per item on this hardware (replaces the stage's "
        "cpu_ms; archkit calibrate measures it from the service's stage histograms)",
    )


class Environment(Node):
    """Budget overrides for one hardware profile (e.g. `cpu`, `h200`)."""

    id: Annotated[Id, IdOf("environment")]
    description: str | None = None
    hardware: str | None = None
    budgets: Budgets | None = None
    stages: list[StageOverride] = Field(default_factory=list)
    measured: str | None = Field(None, description="where the numbers come from")
    device: Device | None = Field(None, description="where every model stage runs on this hardware")
    cpu_cores: Annotated[float, Field(gt=0)] | None = Field(
        None,
        description="every service runs on one machine with this many cores (a development box): "
        "all stages share them",
    )
    calibration: str | None = Field(
        None,
        description="a calibration file written by `archkit calibrate` (path relative to the spec): its "
        "measured service times replace the model stages' on this hardware",
    )


# --------------------------------------------------------------------------- the spec


class CheckSettings(Node):
    """Per-spec rule selection, like a linter's config."""

    ignore: list[str] = Field(default_factory=list)
    select: list[str] = Field(default_factory=list)
    settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per-rule settings by code, e.g. {AK402: {max_attempts: 4}} (`archkit explain CODE` "
        "lists a rule's settings; AK113 refuses unknown ones)",
    )


class Spec(Node):
    """An archkit/v1 spec: one AI service's architecture."""

    api_version: Literal["archkit/v1"] = Field(alias="apiVersion")
    metadata: Metadata
    budgets: Budgets = Field(default_factory=Budgets)
    dataflow: Dataflow = Field(default_factory=Dataflow)
    controlflow: Controlflow = Field(default_factory=Controlflow)
    topology: Topology = Field(default_factory=Topology)
    faulttrees: list[FaultTree] = Field(default_factory=list)
    observability: Observability = Field(default_factory=Observability)
    slos: list[Slo] | None = Field(
        None, max_length=64, description="service level objectives (default: derived from budgets)"
    )
    policies: Policies = Field(default_factory=Policies)
    loadtest: Loadtest | None = None
    environments: list[Environment] = Field(default_factory=list)
    checks: CheckSettings = Field(default_factory=CheckSettings)
    traffic: Traffic = Field(
        default_factory=lambda: Traffic(), description="admission and rate limits (archkit.spec.traffic)"
    )
    config: Config | None = Field(
        None, description="parameters in a configuration store per environment (seed 000 §4.2)"
    )
    _applied_env: str | None = PrivateAttr(default=None)

    @property
    def applied_environment(self) -> Environment | None:
        """The environment `with_environment` applied to this copy, if any."""
        return self.environment(self._applied_env) if self._applied_env else None

    # ---- lookups (derived; built on demand, never stored in the document)
    def stage(self, stage_id: str) -> Stage | None:
        return self.by_id("stage").get(stage_id)

    def service(self, service_id: str) -> Service | None:
        return self.by_id("service").get(service_id)

    def pool(self, pool_id: str) -> NodePool | None:
        return self.by_id("node pool").get(pool_id)

    def control_node(self, node_id: str) -> Any:
        return self.by_id("control-flow node").get(node_id)

    def environment(self, env_id: str) -> Environment | None:
        return self.by_id("environment").get(env_id)

    def by_id(self, namespace: str) -> dict[str, Any]:
        """id -> the first object of a namespace ('stage', 'node pool', ...), from the model's IdOf marks.

        First wins; duplicates are reported by AK102. Built once per spec by one walk.
        """
        return refs_of(self).first(namespace)

    def with_environment(self, env_id: str | None) -> Spec:
        """A copy of the spec with one environment's budget overrides applied."""
        if not env_id:
            return self
        env = self.environment(env_id)
        if env is None:
            raise KeyError(env_id)
        clone = self.model_copy(deep=True)
        clone.__dict__.pop("_archkit_index", None)
        clone._applied_env = env.id
        if env.budgets is not None:
            for key in env.budgets.model_fields_set:
                setattr(clone.budgets, key, getattr(env.budgets, key))
        for ov in env.stages:
            st = clone.stage(ov.stage)
            if st is None:
                continue
            for key in ("p50_ms", "p95_ms", "p99_ms"):
                if getattr(ov, key) is not None:
                    setattr(st, key, getattr(ov, key))
        _copy_paths(self, clone)
        # Objects the environment replaces are swapped in after the path copy (a replaced list of
        # another length would shift every later path) and keep the override's own paths, so a
        # finding about them points at the environment's line.
        for ov in env.stages:
            st = clone.stage(ov.stage)
            if st is None or st.model is None:
                continue
            if ov.service_time is not None:
                st.model.service_time = [t.model_copy(deep=True) for t in ov.service_time]
                for a, b in zip(ov.service_time, st.model.service_time, strict=False):
                    _copy_paths(a, b)
            if ov.batching is not None:
                st.model.batching = ov.batching.model_copy(deep=True)
                _copy_paths(ov.batching, st.model.batching)
            if ov.instances is not None:
                st.model.instances = ov.instances
        for ov in env.stages:
            st = clone.stage(ov.stage)
            if st is not None and ov.cpu_ms is not None:
                st.cpu_ms = ov.cpu_ms
        if env.device is not None:
            for st in clone.dataflow.stages:
                if st.model is not None:
                    st.model.device = env.device
        return clone


def _copy_paths(src: Node, dst: Node) -> None:
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


# The llm section builds on Node and the unit types above, so it is imported last and the models that
# contain it are completed here (pydantic resolves the `LlmStage` annotation from this namespace).
from archkit.spec.config import Config  # noqa: E402
from archkit.spec.llm import LlmStage  # noqa: E402
from archkit.spec.model_contract import ModelContract  # noqa: E402
from archkit.spec.runtime import Runtime  # noqa: E402
from archkit.spec.signals import MemoryGrowth  # noqa: E402
from archkit.spec.traffic import Traffic  # noqa: E402

ModelInfo.model_rebuild()
GoldenSignals.model_rebuild()
Stage.model_rebuild()
Service.model_rebuild()
Spec.model_rebuild()
