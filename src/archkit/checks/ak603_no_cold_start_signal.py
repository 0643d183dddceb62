"""AK603: a model service has no cold-start signal."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class NoColdStartSignal(Rule):
    """A spec with model stages declares no cold-start golden signal."""

    code = "AK603"
    name = "no-cold-start-signal"
    severity = Severity.WARNING
    source = "seed 004 §3.4 (cold-start latency over 800 ms triggers model warm-up)"
    rationale = """
The time from loading a model to its first answer decides whether scale-out and rollbacks
hurt users. Measure it and act (warm-up requests) when it exceeds the limit (800 ms in the
seed).
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        if (
            any(s.model for s in spec.dataflow.stages)
            and spec.observability.golden_signals.cold_start is None
        ):
            yield ctx.at(
                spec.observability, "golden_signals", "no cold_start golden signal for the model service(s)"
            )
