"""AK615: a model's declared cold start is above the cold-start alert's threshold."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class ColdStartOverAlert(Rule):
    """A model stage's `cold_start_ms` exceeds the cold-start signal's `max_ms`: every load fires the alert."""

    code = "AK615"
    name = "cold-start-over-alert"
    severity = Severity.WARNING
    source = "seed 004 §3.4 (cold-start latency over 800 ms triggers model warm-up)"
    rationale = """
Seed 004 §3.4 watches the time from loading a model to its first answer and acts (a warm-up
task) when it exceeds 800 ms. A spec that declares a model's `cold_start_ms` above its own
`golden_signals.cold_start.max_ms` designs an alert that fires on every scale-out, rollback
and restart: either the model needs warming before it takes traffic (Triton's
`model_warmup`, which `archkit render` writes from the load-test scenarios' inputs) and the
measured cold start is then below the threshold, or one of the two numbers is wrong.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        signal = ctx.spec.observability.golden_signals.cold_start
        if signal is None:
            return  # AK603 asks for the signal
        for st in ctx.spec.dataflow.stages:
            m = st.model
            if m is None or m.cold_start_ms is None or m.cold_start_ms <= signal.max_ms:
                continue
            yield ctx.at(
                m,
                "cold_start_ms",
                f"stage '{st.id}' model '{m.name}' cold start {m.cold_start_ms:g} ms is above the "
                f"cold-start alert's {signal.max_ms:g} ms (observability.golden_signals.cold_start.max_ms): "
                "every load fires it",
            )
