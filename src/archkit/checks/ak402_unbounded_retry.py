"""AK402: a call has no declared, bounded retry policy."""

from collections.abc import Iterator

from pydantic import Field

from archkit.checks.registry import Context, Rule, RuleSettings, register
from archkit.diagnostics import Diagnostic, Severity


@register
class UnboundedRetry(Rule):
    """A call declares no retry policy, or retries more than 3 times."""

    code = "AK402"
    name = "unbounded-retry"
    severity = Severity.WARNING
    source = "seed 000 §3.2 (retry policy on the diagram: at most 1 retry, 200 ms apart)"
    rationale = """
Every call states how it retries — `retry: {attempts: 0}` is a valid answer — so that
retry load is a design decision, not a client library's default. More than three retries
multiply load on a struggling dependency (see AK409) without raising the success rate much.
"""

    class Settings(RuleSettings):
        max_attempts: int = Field(3, ge=0, description="retries a call may declare before AK402 warns")

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        max_attempts = ctx.settings(self.Settings).max_attempts
        for c in ctx.spec.controlflow.calls:
            if c.retry is None:
                yield ctx.at(
                    c,
                    "id",
                    f"call '{c.id}' declares no retry policy",
                    hint="retry: {attempts: 1, backoff_ms: 200}",
                )
            elif c.retry.attempts > max_attempts:
                yield ctx.at(
                    c.retry,
                    "attempts",
                    f"call '{c.id}' retries {c.retry.attempts} times (more than {max_attempts})",
                )
