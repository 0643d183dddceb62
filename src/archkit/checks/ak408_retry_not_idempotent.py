"""AK408: a call retries a non-idempotent operation."""

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic


@register
class RetryNotIdempotent(Rule):
    """A call marked `idempotent: false` retries: a timeout can execute the operation twice."""

    code = "AK408"
    name = "retry-not-idempotent"
    source = "seed 004 §2.1 (users refreshing a slow page sent duplicate requests that filled the queue)"
    rationale = """
A timed-out call may still have succeeded. Retrying a non-idempotent operation (a payment,
a queue publish without a dedup key, a review ticket) then performs it twice. Either make
it idempotent (request ids, dedup keys) or set retry attempts to 0.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for c in ctx.spec.controlflow.calls:
            if not c.idempotent and c.retry and c.retry.attempts > 0:
                yield ctx.at(
                    c.retry,
                    "attempts",
                    f"call '{c.id}' is not idempotent but retries {c.retry.attempts} time(s)",
                )
