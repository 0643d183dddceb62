"""The archkit/v1 spec model: one AI service's data flow, control flow, topology and faults.

Conventions (see docs/spec.md):
- every number carries its unit in the key name (`p99_ms`, `gb_per_hour`, `max_queue_delay_us`);
- every entity that others refer to has an `id`; references are plain ids and are resolved
  by the structural checks (AK1xx), not here, so that all dangling references are reported
  together with their source lines;
- unknown keys are errors (`extra="forbid"`), with a "did you mean" suggestion from the loader.

This module is the root (`Spec`, its metadata, budgets, environments and rule settings); each section
lives in a module of its own (`base`, `dataflow`, `controlflow`, `topology`, `faulttrees`,
`observability`, `loadtest`) and every public name is re-exported here, so `archkit.spec.model` stays
the one place to import the model from.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr

# The sections live in modules of their own: `import *` re-exports each one's `__all__` from here (so
# every name stays importable from archkit.spec.model), and what the root uses is imported by name too.
from archkit.spec.base import *  # noqa: F403
from archkit.spec.base import Fraction, Id, Instances, Ms, Node, Rps, copy_paths
from archkit.spec.controlflow import *  # noqa: F403
from archkit.spec.controlflow import Controlflow
from archkit.spec.dataflow import *  # noqa: F403
from archkit.spec.dataflow import Batching, BatchTiming, Dataflow, Device, Stage
from archkit.spec.faulttrees import *  # noqa: F403
from archkit.spec.faulttrees import FaultTree
from archkit.spec.governance import *  # noqa: F403
from archkit.spec.governance import GpuJob, SignOff
from archkit.spec.loadtest import *  # noqa: F403
from archkit.spec.loadtest import Loadtest
from archkit.spec.observability import *  # noqa: F403
from archkit.spec.observability import Observability, Policies, Slo
from archkit.spec.pools import *  # noqa: F403
from archkit.spec.pools import ConnectionPool
from archkit.spec.refs import IdOf, RefTo, refs_of
from archkit.spec.topology import *  # noqa: F403
from archkit.spec.topology import NodePool, Service, Topology
from archkit.spec.tracing import *  # noqa: F403
from archkit.spec.tracing import Tracing
from archkit.spec.workflow import *  # noqa: F403
from archkit.spec.workflow import Workflow

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
    signoffs: list[SignOff] = Field(
        default_factory=list,
        max_length=1000,
        description="reviews that approved the design (archkit.spec.governance)",
    )


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
    cpu_p99_ms: Ms | None = Field(
        None, description="the P99 of that processor time on this hardware (replaces the stage's cpu_p99_ms)"
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
    verify: VerifySettings | None = Field(
        None,
        description="endpoints `verify --env` with this environment may also reach (archkit.spec.verify_policy)",
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
    workflows: list[Workflow] = Field(
        default_factory=list, max_length=1000, description="control-plane workflows (archkit.spec.workflow)"
    )
    topology: Topology = Field(default_factory=Topology)
    faulttrees: list[FaultTree] = Field(default_factory=list)
    jobs: list[GpuJob] = Field(
        default_factory=list, max_length=1000, description="batch/offline GPU jobs (archkit.spec.governance)"
    )
    connection_pools: list[ConnectionPool] = Field(
        default_factory=list, max_length=1000, description="pooled clients per service (archkit.spec.pools)"
    )
    observability: Observability = Field(default_factory=Observability)
    tracing: Tracing | None = Field(None, description="spans on external calls (archkit.spec.tracing)")
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
    verify: VerifySettings = Field(
        default_factory=lambda: VerifySettings(),
        description="endpoints off loopback `archkit verify` may reach (archkit.spec.verify_policy)",
    )
    _applied_env: str | None = PrivateAttr(default=None)
    _effective_cores: float | None = PrivateAttr(default=None)  # calibrated (calibrate.apply.effective_cores)

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
        copy_paths(self, clone)
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
                    copy_paths(a, b)
            if ov.batching is not None:
                st.model.batching = ov.batching.model_copy(deep=True)
                copy_paths(ov.batching, st.model.batching)
            if ov.instances is not None:
                st.model.instances = ov.instances
        for ov in env.stages:
            st = clone.stage(ov.stage)
            if st is not None and ov.cpu_ms is not None:
                st.cpu_ms = ov.cpu_ms
            if st is not None and ov.cpu_p99_ms is not None:
                st.cpu_p99_ms = ov.cpu_p99_ms
        if env.device is not None:
            for st in clone.dataflow.stages:
                if st.model is not None:
                    st.model.device = env.device
        return clone


# The llm section builds on Node and the unit types above, so it is imported last and the models that
# contain it are completed here (pydantic resolves the `LlmStage` annotation from this namespace).
from archkit.spec.config import Config  # noqa: E402
from archkit.spec.llm import LlmStage  # noqa: E402, F401
from archkit.spec.traffic import Traffic  # noqa: E402
from archkit.spec.verify_policy import VerifySettings  # noqa: E402

Stage.model_rebuild()  # resolves `LlmStage` (imported just above) in dataflow.Stage
Environment.model_rebuild()  # resolves `VerifySettings` (imported just above)
Spec.model_rebuild()
