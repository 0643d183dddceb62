"""AK220: a failure-prone stage does not name its failure cause."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class FailureWithoutCause(Rule):
    """A stage's `failure_rate` is above `budgets.failure_rate_threshold` and it declares no `failure_cause`."""

    code = "AK220"
    name = "failure-without-cause"
    severity = Severity.WARNING
    source = "seed 000 §3.1 (each stage's failure rate in a red dashed box with its cause: ASR 1.2 %, OOM on long audio)"
    rationale = """
Seed 000 §3.1's data-flow diagram marks every stage's failure rate, in a red dashed box
where it is high, with its cause: upload 0.3 % (network timeouts), ASR 1.2 % (out of memory
on long audio), embedding 0.05 % (over-long token input). The cause is what turned "the ASR
is unreliable" into one missing `ffmpeg -t 120`. A stage whose `failure_rate` exceeds
`budgets.failure_rate_threshold` (the share above which the `dataflow` diagram draws it as
failure-prone) must say why in `failure_cause`.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        limit = ctx.spec.budgets.failure_rate_threshold
        for st in ctx.spec.dataflow.stages:
            if st.failure_rate is not None and st.failure_rate > limit and not st.failure_cause:
                yield ctx.at(
                    st,
                    "failure_rate",
                    f"stage '{st.id}' fails {100 * st.failure_rate:g} % of requests (over the "
                    f"{100 * limit:g} % threshold) and names no failure_cause (seed 000 §3.1)",
                )
