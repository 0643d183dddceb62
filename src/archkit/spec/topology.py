"""The topology section: node pools, GPUs, networks, storage and the services that run stages."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import Field

from archkit.spec.base import MAX_SECONDS, Id, Ms, Node, PortNumber, Replicas, Seconds
from archkit.spec.refs import IdOf, RefTo
from archkit.spec.runtime import Runtime

__all__ = [
    "Admission",
    "EgressRule",
    "Gpu",
    "GpuSharing",
    "IngressRule",
    "KubeRef",
    "Mount",
    "Network",
    "NodePool",
    "OsTuning",
    "Port",
    "Probe",
    "Probes",
    "ResourceAmounts",
    "Resources",
    "Security",
    "Service",
    "Storage",
    "Taint",
    "Topology",
]


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
    cost_per_hour: Annotated[float, Field(gt=0, le=1_000_000)] | None = Field(
        None, description="price of one GPU for an hour, in any currency (seed 004 §4.4; AK231)"
    )


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
    scopes: list[str] = Field(
        default_factory=list,
        max_length=256,
        description="scopes a token must carry, e.g. compare:own-records (seed 000 §2.4; AK513)",
    )


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
    owner: str | None = Field(None, max_length=256, description="the team that runs it (AK115)")
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
