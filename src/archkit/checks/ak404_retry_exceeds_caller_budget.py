"""AK404: a call's retries cannot finish within its caller's budget."""

from collections.abc import Iterator

from archkit.checks.common import call_budgets, fmt_ms
from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity


@register
class RetryExceedsCallerBudget(Rule):
    """Attempts × timeout + backoffs of a call exceed its caller's timeout or the request deadline."""

    code = "AK404"
    name = "retry-exceeds-caller-budget"
    severity = Severity.WARNING
    source = "seed 000 §3.2 (timeout 800 ms, one retry after 200 ms); seed 004 §2.1 (users refresh after 2 s)"
    rationale = """
A call's worst case is (1 + attempts) × timeout_ms + the backoffs. If that exceeds the
budget of whoever waits for it — the caller call's timeout (`caller`) or the request
deadline `controlflow.timeout_ms` — the last retry is cut off: it adds load on a struggling
dependency and can never produce an answer. Shorten the timeout, drop a retry, or raise the
deadline.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        for cb in call_budgets(ctx):
            retry = cb.call.retry
            if retry is None or cb.worst_ms is None or cb.budget_ms is None:
                continue  # without retry there is one attempt, nothing to add up
            attempts = 1 + retry.attempts
            if attempts > 1 and cb.worst_ms > cb.budget_ms + 1e-9:
                yield ctx.at(
                    retry,
                    "attempts",
                    f"call '{cb.call.id}': {attempts} attempts × {fmt_ms(cb.call.timeout_ms)} + backoff "
                    f"= {fmt_ms(cb.worst_ms)} > {cb.budget_source} {fmt_ms(cb.budget_ms)}",
                )
