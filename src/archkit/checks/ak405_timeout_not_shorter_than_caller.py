"""AK405: a callee's timeout is not shorter than its caller's."""

from collections.abc import Iterator

from archkit.checks.common import call_budgets, fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class TimeoutNotShorterThanCaller(Rule):
    """A nested call's timeout is ≥ its caller's timeout (or a call's ≥ the request deadline)."""

    code = "AK405"
    name = "timeout-not-shorter-than-caller"
    source = "seed 000 §3.2 (each decision function starts with context.WithTimeout; deadlines nest)"
    rationale = """
Timeouts must shrink inwards: the caller gives up first otherwise, and the callee keeps
working (and retrying) for an answer nobody waits for. A nested call (`caller:`) needs a
timeout below its caller's; a top-level call one below the request deadline.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for cb in call_budgets(ctx):
            t = cb.call.timeout_ms
            if t is None or cb.budget_ms is None:
                continue
            if t >= cb.budget_ms:
                yield ctx.at(
                    cb.call,
                    "timeout_ms",
                    f"call '{cb.call.id}' timeout {fmt_ms(t)} is not shorter than "
                    f"{cb.budget_source} {fmt_ms(cb.budget_ms)}",
                )
