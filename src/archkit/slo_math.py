"""What the checks need to know about a spec's SLOs, below the plans: bindings, bucket gaps, RE2.

The SLO plan (`archkit.plans.slo`) builds on these; the check rules (AK606-AK608) read them
directly, as checks come before plans in archkit's layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from archkit.spec.model import MetricType, Slo, Spec, StageMetrics


def unit_seconds(metric: str) -> float:
    """Seconds per unit of a latency metric, from its name (Prometheus naming: base unit seconds)."""
    m = metric.lower()
    if m.endswith("_us") or "microseconds" in m:
        return 1e-6
    if m.endswith(("_ms", "_rq_time")) or "milliseconds" in m:  # Envoy's *_rq_time histograms are in ms
        return 1e-3
    return 1.0


@dataclass(frozen=True)
class BucketGap:
    """A latency threshold that is not a boundary of the stage's histogram buckets."""

    threshold: float  # in the metric's unit
    lower: float | None  # the boundary used (largest under the threshold), if any
    upper: float | None  # the next boundary above it
    unit_s: float

    @property
    def worst_error_ms(self) -> float:
        """How far from the threshold the SLI may count: the distance to the farther boundary."""
        lo = self.lower if self.lower is not None else 0.0
        hi = self.upper if self.upper is not None else self.threshold
        return max(self.threshold - lo, hi - self.threshold) * self.unit_s * 1000


def bucket_gap(threshold: float, buckets: list[float] | None, unit: float) -> BucketGap | None:
    """The gap around `threshold` (metric units) among `buckets`; None when it is one, or none are known."""
    if not buckets:
        return None
    if any(math.isclose(b, threshold, rel_tol=1e-9) for b in buckets):
        return None
    below = [b for b in buckets if b < threshold]
    above = [b for b in buckets if b > threshold]
    return BucketGap(threshold, max(below) if below else None, min(above) if above else None, unit)


def ordered_metrics(spec: Spec) -> list[StageMetrics]:
    """`observability.stages` entries of known stages, in data-flow order."""
    order = {st.id: i for i, st in enumerate(spec.dataflow.stages)}
    known = [sm for sm in spec.observability.stages if sm.stage in order]
    return sorted(known, key=lambda sm: order[sm.stage])


def stage_metrics(spec: Spec, stage: str | None) -> StageMetrics | None:
    return next((sm for sm in spec.observability.stages if sm.stage == stage), None)


def latency_binding(spec: Spec, stage: str | None) -> StageMetrics | None:
    """The histogram-bound stage a latency SLO reads: `stage`, or the first one bound to a histogram."""
    if stage is not None:
        sm = stage_metrics(spec, stage)
    else:
        sm = next(
            (m for m in ordered_metrics(spec) if m.latency and m.latency.type is MetricType.histogram), None
        )
    if sm is None or sm.latency is None or sm.latency.type is not MetricType.histogram:
        return None
    return sm


def availability_binding(spec: Spec, stage: str | None) -> StageMetrics | None:
    """The stage whose errors and requests an availability SLO without events reads."""
    if stage is not None:
        sm = stage_metrics(spec, stage)
    else:
        sm = next((m for m in ordered_metrics(spec) if m.errors and m.requests), None)
    return sm if sm is not None and sm.errors is not None and sm.requests is not None else None


def has_events(slo: Slo) -> bool:
    return bool((slo.bad or slo.good) and (slo.total or (slo.bad and slo.good)))


def slo_problem(spec: Spec, slo: Slo) -> tuple[str, str] | None:
    """(field, message) when an `slos` entry cannot be compiled to rules, else None."""
    if slo.kind == "latency":
        if slo.threshold_ms is None:
            return "name", f"latency SLO {slo.name} needs threshold_ms"
        if slo.good and slo.total:
            return None
        if latency_binding(spec, slo.stage) is None:
            return "stage", f"latency SLO {slo.name}: no histogram latency series bound to its stage"
        return None
    if has_events(slo) or availability_binding(spec, slo.stage) is not None:
        return None
    return "stage", f"availability SLO {slo.name}: no bad/good/total events and no stage errors+requests"


def latency_gap(spec: Spec, slo: Slo) -> BucketGap | None:
    """The bucket gap of a latency SLO read from its stage's histogram (None when on a boundary)."""
    if slo.kind != "latency" or slo.threshold_ms is None or (slo.good and slo.total):
        return None
    sm = latency_binding(spec, slo.stage)
    if sm is None or sm.latency is None:
        return None
    unit = unit_seconds(sm.latency.metric.removesuffix("_bucket"))
    return bucket_gap(slo.threshold_ms / 1000 / unit, sm.latency.buckets, unit)


def re2_error(pattern: str) -> str | None:
    """Why `pattern` is not an RE2 regex (what Prometheus compiles matchers with), or None."""
    import re2  # type: ignore[import-untyped]  # google-re2: the RE2 library Go's regexp syntax follows

    opts = re2.Options()
    opts.log_errors = False  # the reason comes back in the exception; RE2 would also print it
    try:
        re2.compile(pattern, opts)
    except re2.error as exc:
        why = exc.args[0] if exc.args else "invalid regex"
        return why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
    return None


def fullmatch_re2(pattern: str, text: str) -> bool:
    """Whether RE2 matches all of `text` (False for a pattern RE2 rejects); linear time."""
    import re2  # type: ignore[import-untyped]

    opts = re2.Options()
    opts.log_errors = False
    try:
        return re2.compile(pattern, opts).fullmatch(text) is not None
    except re2.error:
        return False
