"""AK409: nested retries multiply into a retry storm, or retries fire in lockstep."""

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.common import call_budgets
from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity


@register
class RetryStorm(Rule):
    """Nested retries multiply one request into more than 4 calls, or retries have no backoff."""

    code = "AK409"
    name = "retry-storm"
    severity = Severity.WARNING
    source = "seed 000 §3.2 (one retry, 200 ms apart); seed 004 §2.1 (duplicate requests filled the queue)"
    rationale = """
Retries multiply across layers: three nested calls with two retries each turn one user
request into 27 calls to the innermost service exactly when it is slowest. Keep the product
of (1 + attempts) along a call chain at 4 or less (retry at one layer only), and space
retries with a backoff so a blip does not return as a synchronised wave.
"""

    class Settings(RuleSettings):
        max_amplification: int = Field(
            4, ge=1, description="calls one request may become along a call chain (product of 1 + attempts)"
        )

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        limit = ctx.settings(self.Settings).max_amplification
        for cb in call_budgets(ctx):
            c = cb.call
            if cb.amplification > limit and c.caller:
                yield ctx.at(
                    c,
                    "caller",
                    f"call chain {' -> '.join(cb.chain)} multiplies one request into "
                    f"{cb.amplification} calls to '{c.target}'",
                )
            if c.retry and c.retry.attempts > 0 and c.retry.backoff_ms == 0:
                yield ctx.at(c.retry, "attempts", f"call '{c.id}' retries without backoff")
