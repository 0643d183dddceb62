"""AK403: a call has no fallback path."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class CallWithoutFallback(Rule):
    """A control-flow call has no `on_failure` path for errors and timeouts."""

    code = "AK403"
    name = "call-without-fallback"
    source = "seed 000 §3.2 (HBase timeout → Redis cache → default list); seed 004 §2.1 (registry timeout → score, skip review)"
    rationale = """
Every branch must show where a failed or timed-out call goes: a cache, a lighter model, a
default answer, human review. Without it the error propagates to the user and the
diagrams cannot show the degraded path that the chaos load test (seed 000 §4.4) exercises.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for c in ctx.spec.controlflow.calls:
            if not c.on_failure:
                yield ctx.at(c, "id", f"call '{c.id}' to '{c.target}' has no on_failure fallback")
