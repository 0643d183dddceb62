"""AK606: a latency SLO's threshold is not a boundary of its stage's histogram buckets."""

from collections.abc import Iterator

from archkit.analysis.slo import latency_binding, latency_gap
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


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
        for slo in ctx.spec.slos or []:
            gap = latency_gap(ctx.spec, slo)
            binding = latency_binding(ctx.spec, slo.stage)
            if gap is None or slo.threshold_ms is None or binding is None:
                continue
            unit_ms = gap.unit_s * 1000
            used = f"{gap.lower * unit_ms:g} ms" if gap.lower is not None else "no boundary under it"
            near = ", ".join(f"{b * unit_ms:g}" for b in (gap.lower, gap.upper) if b is not None)
            yield ctx.at(
                slo,
                "threshold_ms",
                f"latency SLO '{slo.name}': {slo.threshold_ms:g} ms is not a bucket boundary of stage "
                f"'{binding.stage}' (nearest {near} ms); the SLI reads {used}, worst-case error "
                f"{gap.worst_error_ms:g} ms",
            )
