"""AK206: the throughput target exceeds what the declared instances can serve at any batch size."""

from collections.abc import Iterator

from archkit.checks.common import capacities
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class ThroughputOverCeiling(Rule):
    """The design (or peak) rate exceeds the stage's capacity ceiling with full batches."""

    code = "AK206"
    name = "throughput-over-ceiling"
    source = "seed 000 §4.4 ('supports 1000 QPS' must be proven); seed 000 §2.1 (batch size vs throughput)"
    rationale = """
The ceiling of a batched stage is c · b / S(b) requests per second with full batches of b on
c instances — the best it can ever do. A target above the best ceiling over all batch sizes
cannot be met by tuning; it needs more instances or a faster model. The peak rate is used
when it is declared.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for cap in capacities(ctx):
            ceiling, model = cap.ceiling_rps, cap.stage.model
            rate = max(x for x in (cap.arrival_rps, cap.peak_rps, 0) if x is not None)
            if ceiling is None or model is None or rate <= 0 or rate <= ceiling:
                continue
            what = "peak" if cap.peak_rps and rate == cap.peak_rps else "design"
            yield ctx.at(
                model,
                "instances",
                f"stage '{cap.stage.id}' can serve at most {ceiling:.1f} req/s "
                f"({cap.replicas}×{cap.instances} instances, best batch size) < {what} rate {rate:g} req/s",
            )
