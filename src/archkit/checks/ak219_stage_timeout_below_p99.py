"""AK219: a stage's own timeout is shorter than its P99 budget."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.common import fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class StageTimeoutBelowP99(Rule):
    """A stage's `timeout_ms` (the bound on its own work) is below its `p99_ms`: over 1 % of its work is cut off."""

    code = "AK219"
    name = "stage-timeout-below-p99"
    severity = Severity.WARNING
    source = "seed 000 §3.1 (bound the work per request: ffmpeg -t 120 stopped a 30-minute recording)"
    rationale = """
Seed 000 §3.1 bounds each request's work at the stage that could run without end (the ASR
decoder's `-t 120`); `Stage.timeout_ms` declares that bound. A bound below the stage's own
P99 budget cuts off more than 1 % of requests the budget calls normal: one of the two
numbers is wrong. (A call's timeout against its target's P99 is AK207.)
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for st in ctx.spec.dataflow.stages:
            if st.timeout_ms is None or st.p99_ms is None or st.timeout_ms >= st.p99_ms:
                continue
            yield ctx.at(
                st,
                "timeout_ms",
                f"stage '{st.id}' stops its work after {fmt_ms(st.timeout_ms)} but its P99 budget is "
                f"{fmt_ms(st.p99_ms)}: over 1 % of requests are cut off",
            )
