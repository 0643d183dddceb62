"""AK604: a model service has no input-drift signal."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class NoDriftSignal(Rule):
    """A spec with model stages declares no feature-drift golden signal."""

    code = "AK604"
    name = "no-drift-signal"
    severity = Severity.WARNING
    source = "seed 004 §3.4 (KS test of live vs training pixel histograms, alert at p < 0.01, with an action)"
    rationale = """
Models fail silently when inputs drift: every request still succeeds, with worse answers.
Compare live inputs with the training distribution (KS, PSI or chi²) and open a data-quality
ticket when the p-value falls below the threshold.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        if any(s.model for s in spec.dataflow.stages) and spec.observability.golden_signals.drift is None:
            yield ctx.at(
                spec.observability, "golden_signals", "no drift golden signal for the model service(s)"
            )
