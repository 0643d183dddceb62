"""AK401: a call has no timeout."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class CallWithoutTimeout(Rule):
    """A control-flow call declares no `timeout_ms`."""

    code = "AK401"
    name = "call-without-timeout"
    source = "seed 000 §3.2 (every service call is annotated with its timeout, e.g. feature service 800 ms)"
    rationale = """
A call without a timeout waits as long as its dependency hangs; the request holds a worker,
a connection and the user until the client gives up. The seed's control-flow diagram is a
code contract: each call becomes `context.WithTimeout(ctx, ...)` with the value on the
diagram.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for c in ctx.spec.controlflow.calls:
            if c.timeout_ms is None:
                yield ctx.at(c, "id", f"call '{c.id}' to '{c.target}' has no timeout_ms")
