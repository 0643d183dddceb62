"""The observability, SLO and policy sections: metrics, golden signals, SLOs, degrade and security policies."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import Field

from archkit.spec.base import MAX_MS, MAX_RPS, MAX_SECONDS, Fraction, Id, Ms, Node, PortNumber
from archkit.spec.degrade_when import DegradeWhen
from archkit.spec.keys import KeyCustody
from archkit.spec.refs import IdOf, RefTo
from archkit.spec.signals import MemoryGrowth

# --------------------------------------------------------------------------- observability


__all__ = [
    "ColdStart",
    "DegradeRule",
    "Drift",
    "EffectiveQps",
    "GoldenSignals",
    "GpuMemory",
    "LogPolicy",
    "Matcher",
    "MetricRef",
    "MetricType",
    "Observability",
    "Policies",
    "ScrapeTarget",
    "SecurityPolicy",
    "Slo",
    "SloEvents",
    "StageMetrics",
]


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
    when: DegradeWhen | None = Field(None, description="the condition as data (archkit.spec.degrade_when)")


class SecurityPolicy(Node):
    """Service-wide security settings."""

    kms_key_rotation_days: Annotated[int, Field(ge=1, le=36_500)] | None = None
    training_data_encrypted: bool | None = None
    key_custody: KeyCustody | None = Field(
        None,
        description="who holds the keys of data encrypted at rest, for every stage that does not "
        "say (seed 000 §2.4: keys in a KMS; rule AK514)",
    )


class Policies(Node):
    degrade: list[DegradeRule] = Field(default_factory=list)
    security: SecurityPolicy | None = None
