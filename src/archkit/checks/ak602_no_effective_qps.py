"""AK602: a model service has no effective-QPS signal."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class NoEffectiveQps(Rule):
    """A spec with model stages declares no effective-QPS golden signal."""

    code = "AK602"
    name = "no-effective-qps"
    severity = Severity.WARNING
    source = "seed 004 §3.4 (effective QPS: successes with confidence ≥ 0.8 per second; alert below 50 % of baseline)"
    rationale = """
GPU utilisation at 95 % says nothing about whether answers are useful. The first golden
signal of a model service counts successful answers with confidence above a floor per
second, and alerts when it drops below half its baseline.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        if (
            any(s.model for s in spec.dataflow.stages)
            and spec.observability.golden_signals.effective_qps is None
        ):
            yield ctx.at(
                spec.observability,
                "golden_signals",
                "no effective_qps golden signal for the model service(s)",
            )
