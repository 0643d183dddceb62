"""AK207: a call's timeout is shorter than its target's own P99."""

from collections.abc import Iterator

from archkit.checks.common import fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class CallTimeoutBelowP99(Rule):
    """A call times out before its target's P99: more than 1 % of healthy calls fail."""

    code = "AK207"
    name = "call-timeout-below-p99"
    severity = Severity.WARNING
    source = "seed 000 §3.2 (every call carries its timeout, e.g. feature service 800 ms)"
    rationale = """
If the target stage's P99 budget is above the caller's timeout, over 1 % of calls to a
healthy target are cut off, retried and degraded: the timeout turns normal tail latency
into errors. Either the stage's budget or the timeout is wrong.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        spec = ctx.spec
        for c in spec.controlflow.calls:
            st = spec.stage(c.target)
            if st is None or st.p99_ms is None or c.timeout_ms is None:
                continue
            if c.timeout_ms < st.p99_ms:
                yield ctx.at(
                    c,
                    "timeout_ms",
                    f"call '{c.id}' timeout {fmt_ms(c.timeout_ms)} < P99 {fmt_ms(st.p99_ms)} "
                    f"of its target '{st.id}'",
                )
