"""AK606: a latency SLO's threshold is not a boundary of its stage's histogram buckets."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.plans.slo import slo_plan


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
        for s in slo_plan(ctx.spec).slos:
            gap = s.gap
            if gap is None or s.slo is None or s.threshold_ms is None:
                continue
            unit_ms = gap.unit_s * 1000
            used = f"{gap.lower * unit_ms:g} ms" if gap.lower is not None else "no boundary under it"
            near = ", ".join(f"{b * unit_ms:g}" for b in (gap.lower, gap.upper) if b is not None)
            yield ctx.at(
                s.slo,
                "threshold_ms",
                f"latency SLO '{s.name}': {s.threshold_ms:g} ms is not a bucket boundary of stage "
                f"'{s.stage}' (nearest {near} ms); the SLI reads {used}, worst-case error "
                f"{gap.worst_error_ms:g} ms",
            )
