"""AK226: a limit refuses requests with 429/503 but does not say when to come back."""

from __future__ import annotations

from collections.abc import Iterator

from archkit.checks.registry import Context, Rule, register
from archkit.diagnostics import Diagnostic, Severity
from archkit.spec.traffic import RateLimit


@register
class RefusalWithoutRetryAfter(Rule):
    """An admission or rate limit answers 429/503 without a Retry-After."""

    code = "AK226"
    name = "refusal-without-retry-after"
    severity = Severity.WARNING
    source = (
        "seed 004 §3.2 (the API gateway as the AI traffic police: per-model limits, 1,000 vs 200 calls "
        "a minute); RFC 6585 §4 and RFC 9110 §10.2.3 (429/503 with Retry-After)"
    )
    rationale = """
A refused request comes back. Without a Retry-After header every client picks its own retry
delay, usually the default of its HTTP library (immediately, or after a few hundred
milliseconds), so the refused load returns at once and the limiter spends its capacity
refusing the same requests again. A Retry-After tells well-behaved clients when capacity is
expected (RFC 6585 §4 for 429, RFC 9110 §10.2.3 for 503); the load-test report and the
client stubs read it. Give `rejection.retry_after_s` on every admission and rate limit.
"""

    def check(self, ctx: Context) -> Iterator[Diagnostic]:
        limits = list(ctx.spec.traffic.admission) + list(ctx.spec.traffic.rate_limits)
        for lim in limits:
            if lim.rejection.retry_after_s is None:
                what = (
                    f"rate limit '{lim.id}'"
                    if isinstance(lim, RateLimit)
                    else (
                        f"admission limit of {'service' if lim.service else 'stage'} '{lim.service or lim.stage}'"
                    )
                )
                yield ctx.at(
                    lim,
                    None,
                    f"{what} answers {lim.rejection.status} without Retry-After",
                    hint=f"give rejection: {{status: {lim.rejection.status}, retry_after_s: N}}",
                )
