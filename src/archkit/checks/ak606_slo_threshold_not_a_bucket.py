"""AK606: a latency SLO's threshold is not a boundary of its stage's histogram buckets."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.slo_math import BucketGap, bucket_gap, latency_binding, latency_gap, unit_seconds


@register
class SloThresholdNotABucket(Rule):
    """A latency SLO counts requests at or under a threshold the histogram cannot see."""

    code = "AK606"
    name = "slo-threshold-not-a-bucket"
    severity = Severity.WARNING
    source = "seed 000 §4.3 (a budget on the diagram needs a series that measures it); Prometheus histograms count per `le` boundary only"
    rationale = """
A latency SLI is the share of requests in the `le` bucket of its threshold. When the threshold
is not one of the histogram's boundaries, no series holds that count: archkit reads the
boundary just under the threshold (the SLI is pessimistic) and says how far off it can be.
Add the threshold to the histogram's buckets, or move the threshold onto a boundary.
`archkit verify` checks the same against the live `le` labels.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for slo in spec.slos or []:
            gap = latency_gap(spec, slo)
            binding = latency_binding(spec, slo.stage)
            if gap is not None and slo.threshold_ms is not None and binding is not None:
                yield ctx.at(
                    slo,
                    "threshold_ms",
                    _message(f"latency SLO '{slo.name}'", slo.threshold_ms, binding.stage, gap),
                )
        if spec.slos is None:  # the derived latency SLO: the first histogram stage's P99 budget
            binding = latency_binding(spec, None)
            st = spec.stage(binding.stage) if binding is not None else None
            if binding is not None and binding.latency is not None and st is not None and st.p99_ms:
                unit = unit_seconds(binding.latency.metric.removesuffix("_bucket"))
                gap = bucket_gap(st.p99_ms / 1000 / unit, binding.latency.buckets, unit)
                if gap is not None:
                    yield ctx.at(st, "p99_ms", _message("the derived latency SLO", st.p99_ms, st.id, gap))


def _message(what: str, threshold_ms: float, stage: str, gap: BucketGap) -> str:
    unit_ms = gap.unit_s * 1000
    used = f"{gap.lower * unit_ms:g} ms" if gap.lower is not None else "no boundary under it"
    near = ", ".join(f"{b * unit_ms:g}" for b in (gap.lower, gap.upper) if b is not None)
    return (
        f"{what}: {threshold_ms:g} ms is not a bucket boundary of stage '{stage}' (nearest {near} ms); "
        f"the SLI reads {used}, worst-case error {gap.worst_error_ms:g} ms"
    )
